"""urls.origin_of: the one function that reads the origin of a URL."""

from __future__ import annotations

import pytest

from muretai_cli.urls import origin_of


@pytest.mark.parametrize(("url", "origin"), [
    ("HTTPS://Shop.Example.:443/a/b?q=1#f", "https://shop.example"),
    ("http://127.0.0.1:80/x", "http://127.0.0.1"),
    ("https://[::1]:8443/", "https://[::1]:8443"),
    ("https://user@shop.example/", None),
    ("ftp://shop.example/", None),
    ("https:///nohost", None),
    ("https://shop.example:99999/", None),
])
def test_origin_of(url: str, origin: str | None) -> None:
    assert origin_of(url) == origin


def test_https_unless_loopback() -> None:
    assert origin_of("http://shop.example/x", https_unless_loopback=True) is None
    assert origin_of("http://shop.example/x") == "http://shop.example"
    assert origin_of("http://localhost:8/x", https_unless_loopback=True) == "http://localhost:8"


@pytest.mark.parametrize(("url", "canonical"), [
    ("HTTPS://Example.COM:443/support/", "https://example.com/support"),
    ("https://example.com./a//", "https://example.com/a"),
    ("http://LOCALHOST:8788/", "http://localhost:8788"),
    ("https://[::1]:8080/x/", "https://[::1]:8080/x"),
    ("https://example.com/support/.well-known/agent-card.json", "https://example.com/support"),
    ("https://example.com/.well-known/agent.json", "https://example.com"),
])
def test_base_url_canonical_forms(url: str, canonical: str) -> None:
    from muretai_cli.urls import base_from_any

    assert base_from_any(url).text == canonical


@pytest.mark.parametrize(("url", "why", "suggestion"), [
    ("https://example.com/?q=1", "query", "https://example.com"),
    ("https://example.com/a#frag", "fragment", "https://example.com/a"),
    ("https://user:pw@example.com/", "userinfo", None),
    ("https://example.com/a/../b", "dot segments", None),
    ("https://example.com/a/%2e%2e/b", "dot segments", None),
    ("https://exämple.com/", "punycode", None),
    ("http://example.com/", "loopback", "https://example.com"),
    ("ftp://example.com/", "scheme", None),
    ("https://example.com/a//b", "empty path segments", "https://example.com/a/b"),
    ("http://127.0.0.1:1/x[/y]", "percent-encode", None),
    ("https://example.com/caf\u00e9", "percent-encode", None),
])
def test_base_url_refusals_name_the_value_to_use(url: str, why: str,
                                                 suggestion: str | None) -> None:
    from muretai_cli.errors import InputError
    from muretai_cli.urls import parse_base_url

    with pytest.raises(InputError) as err:
        parse_base_url(url)
    assert why in err.value.detail
    if suggestion:
        assert err.value.hint == f"use {suggestion}"


def test_did_addressed_site() -> None:
    from muretai_cli.urls import did_site_key, parse_base_url

    key = "z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"
    assert did_site_key(parse_base_url(f"https://muretai.net/{key}")) == f"did:key:{key}"
    assert did_site_key(parse_base_url(f"https://muretai.net/a/{key}")) is None
    assert did_site_key(parse_base_url(f"https://example.com/{key}")) is None
    assert did_site_key(parse_base_url("https://muretai.net/zABC")) is None, "not a key"
