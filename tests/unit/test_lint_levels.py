"""The level report from a tool manifest, and the service agent's view."""

from __future__ import annotations

import json

import pytest

from muretai_cli.errors import InputError
from muretai_cli.lint import level_report, parse_manifest


def manifest(*names: str) -> bytes:
    return json.dumps([{"name": n, "description": f"{n} tool", "inputSchema": {"type": "object"}}
                       for n in names]).encode()


ALL = ("get_conversation", "send_message", "provide_context", "await_reply")


@pytest.mark.parametrize(("names", "gate", "level", "interoperates"), [
    ((), False, 0, False),
    (("get_conversation",), False, 1, False),
    (("get_conversation", "send_message"), False, 1, False),
    (("get_conversation", "send_message", "provide_context"), False, 2, False),
    (("get_conversation", "send_message", "provide_context"), True, 3, True),
    (ALL, False, 2, False),
    (ALL, True, 4, True),
    ((), True, 0, True),  # level 3 alone interoperates
])
def test_levels(names: tuple[str, ...], gate: bool, level: int, interoperates: bool) -> None:
    report = level_report(parse_manifest(manifest(*names)), gate_seen=gate)
    assert (report.level, report.interoperates) == (level, interoperates)
    nxt = report.to_json()["next"]
    assert (nxt is None) == (level == 4)
    if nxt is not None:
        assert nxt["level"] == level + 1 and nxt["needs"]


def test_next_level_says_what_is_missing() -> None:
    report = level_report(parse_manifest(manifest("get_conversation", "send_message")),
                          gate_seen=False).to_json()
    assert report["next"] == {"level": 2, "name": "Conversational",
                              "needs": ["the provide_context tool"]}


def test_site_agent_view_may_not_expose_visitor_tools() -> None:
    good = level_report(parse_manifest(manifest("get_conversation", "lookup_order")),
                        gate_seen=False, view="site-agent")
    assert good.findings == ()
    bad = level_report(parse_manifest(manifest("get_conversation", "await_reply")),
                       gate_seen=False, view="site-agent")
    assert [(f.rule, f.path) for f in bad.findings] == [("view-forbidden-tool", "$[1].name")]


def test_manifest_entries_without_a_name_are_findings() -> None:
    good = parse_manifest(manifest("get_conversation"))
    assert good.findings == ()
    bad = parse_manifest(json.dumps({"tools": [{"name": "get_conversation"}, {"title": "x"}]})
                         .encode())
    assert bad.tools == ("get_conversation",)
    assert [(f.rule, f.path) for f in bad.findings] == [("manifest-tool-invalid", "$.tools[1]")]


@pytest.mark.parametrize("raw", [b'{"name": "x"}', b"not json", b"\xef\xbb\xbf[]"])
def test_an_unreadable_manifest_is_an_input_error(raw: bytes) -> None:
    with pytest.raises(InputError):
        parse_manifest(raw)
