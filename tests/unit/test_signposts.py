"""The parsers of what a site sends (``visit/signposts.py``) are total: whatever arrives —
huge, binary, malformed, deeply nested, with a BOM — they return a value or a named
``InputError``, never another exception, and they read only what their caps allow."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muretai_cli.errors import InputError
from muretai_cli.visit.signposts import (
    MAX_LINKS,
    declared_tools,
    parse_links,
    parse_mcp_card,
    parse_robots,
    plausible,
)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=3000))
def test_link_fields_never_raise(field: str) -> None:
    links = parse_links(field)
    assert len(links) <= MAX_LINKS


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=4000))
def test_pages_robots_and_mcp_cards_never_raise(raw: bytes) -> None:
    declared_tools(raw, "https://site.example/")
    parse_robots(raw).allows("/")
    plausible(200, "text/plain", raw, "json", None)
    try:
        parse_mcp_card(raw)
    except InputError as exc:
        assert exc.code in ("malformed-mcp-card", "mcp-card-no-endpoint")


@pytest.mark.parametrize("field", [
    "<" * 100_000, "<a>;" * 50_000, '<a>; rel="' + "x" * 100_000,
    "<a>; rel=service-desc, " * 10_000, "\x00\x1b[2J<a>; rel=x",
])
def test_hostile_link_fields_are_bounded(field: str) -> None:
    started = time.monotonic()
    assert len(parse_links(field)) <= MAX_LINKS
    assert time.monotonic() - started < 2, "one pass over at most 8 KiB"


def test_link_values_and_relations() -> None:
    links = parse_links('</a>; title="x, y; z"; rel=preload, <https://h/c>; '
                        'rel="Service-Desc https://muretai.net/rel/agent-entry"; rel=ignored')
    assert [(x.href, x.rels) for x in links] == [
        ("/a", ("preload",)),
        ("https://h/c", ("service-desc", "https://muretai.net/rel/agent-entry"))]


@pytest.mark.parametrize("raw", [
    b"<form toolname='a' tooldescription='b'>" * 100_000,
    b"<" * 600_000, b"<!--" + b"x" * 600_000, b"<form " + b'a="' * 50_000,
    b"\xff\xfe<\x00f\x00o\x00r\x00m\x00", b"<tool name=x description=y>" * 1000,
])
def test_hostile_pages_are_read_within_the_cap(raw: bytes) -> None:
    page = declared_tools(raw, "https://site.example/")
    assert len(page.tools) <= 200
    assert page.truncated is (len(raw) > 512 * 1024)


def test_robots_groups_longest_match_and_bom() -> None:
    robots = parse_robots(b"\xef\xbb\xbfUser-agent: *\nDisallow: /\nAllow: /$\n\n"
                          b"User-agent: muretai\nDisallow: /private\n")
    assert robots.allows("/") and not robots.allows("/shop")
    assert robots.allows("/shop", "muretai") and not robots.allows("/private/x", "muretai")
    assert not parse_robots(b"User-agent: *\nDisallow: /\n").allows("/")
    assert parse_robots(b"Disallow: /\n").allows("/"), "a rule outside a group is ignored"
    huge = parse_robots(b"User-agent: *\n" + b"Disallow: /a*b*c*d*e*f*g*h*$\n" * 50_000)
    started = time.monotonic()
    assert huge.allows("/")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("raw", "code"), [
    (b"\xef\xbb\xbf{}", "malformed-mcp-card"), (b"[" * 10_000 + b"]" * 10_000,
                                                "malformed-mcp-card"),
    (b'{"url": 1}', "mcp-card-no-endpoint"), (b"[]", "malformed-mcp-card"),
    (b'{"endpoint": "\\ud800"}', "malformed-mcp-card"),
])
def test_mcp_card_refusals_are_named(raw: bytes, code: str) -> None:
    with pytest.raises(InputError) as info:
        parse_mcp_card(raw)
    assert info.value.code == code


def test_a_page_of_unclosed_tags_is_parsed_only_to_its_last_tag_end(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # html.parser rescans the rest of the page at each "<" of an unclosed tag (quadratic:
    # minutes of CPU for the 512 KiB a site check reads); no tag ends past the last ">"
    from muretai_cli.visit import signposts

    fed: list[str] = []
    real = signposts._ToolFinder.feed

    def feed(self: signposts._ToolFinder, data: str) -> None:
        fed.append(data)
        real(self, data)

    monkeypatch.setattr(signposts._ToolFinder, "feed", feed)
    tool = "<form toolname='a' tooldescription='d'>"
    page = declared_tools((tool + "<form b" * 2000).encode(), "https://site.example/")
    assert [t.name for t in page.tools] == ["a"]
    assert fed == [tool]
    assert declared_tools(b"<form toolname='a' tooldescription" * 20000,
                          "https://site.example/").tools == ()
