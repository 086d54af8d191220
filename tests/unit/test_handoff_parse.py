"""The handoff envelope's structure: what is read, and what is dropped before any trust check."""

from __future__ import annotations

from typing import Any

import pytest

from muretai_cli.artifacts.handoff import parse_handoff


def _one(entry: dict[str, Any], v: Any = 1) -> dict[str, Any]:
    return parse_handoff({"_meta": {"handoff": {"v": v, "next": [entry]}}}).to_json()


@pytest.mark.parametrize("entry", [
    {"kind": "ui", "url": "javascript:alert(1)"},
    {"kind": "ui", "url": "https://shop.example/a\x1b[31m"},
    {"kind": "ui", "url": "https://shop.example/a b"},
    {"kind": "ui", "url": "https://shop.example/\u202egnp.exe"},
    {"kind": "mcp", "server": "data:text/html,hi"},
    {"kind": "a2a", "endpoint": "file:///etc/passwd"},
    {"kind": "a2a", "card": "//elsewhere.example/card"},
    {"kind": "dm", "to": "did:key:z6Mk", "connect": "ftp://shop.example/card"},
])
def test_urls_must_be_web_urls(entry: dict[str, Any]) -> None:
    parsed = _one(entry)
    assert parsed["present"] is False
    assert parsed["dropped"][0]["reason"].startswith("bad-field:")


def test_a_web_url_is_kept() -> None:
    assert _one({"kind": "ui", "url": "https://shop.example/p?q=1"})["present"] is True


@pytest.mark.parametrize("v", [1.0, True, "1", 2])
def test_only_the_integer_version_1_is_read(v: Any) -> None:
    parsed = _one({"kind": "ui", "url": "https://shop.example/"}, v=v)
    assert parsed["present"] is False
    assert parsed["dropped"][0]["reason"].startswith("unsupported-version")
