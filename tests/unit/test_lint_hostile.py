"""Site text is hostile: every lint scan stays linear on inputs built to make regexes backtrack.

Before the patterns were anchored at the start of a token run, ``"sk-" * 32000`` (96 KB) took
about 39 s; each case below finishes in milliseconds. The bound is loose (a loaded CI
machine must not fail it) yet far below what backtracking costs here (tens of seconds).
"""

from __future__ import annotations

import time

import pytest

from muretai_cli.lint._text import find_instruction, scan_secrets

HOSTILE = {
    "api-key restarts": "sk-" * 100_000,
    "api-key with underscores": "sk_a-" * 60_000,
    "jwt restarts": "eyJaaaaaaaaa-" * 30_000,
    "bearer words": "bearer " * 60_000,
    "long hex run": "a" * 300_000,
    "call a tool": "call " + "a" * 300_000,
    "ignore the": "ignore the " * 30_000,
    "rk runs": "rk_" * 100_000 + "x" * 15,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_scans_are_linear(name: str) -> None:
    text = HOSTILE[name]
    started = time.perf_counter()
    list(scan_secrets(text))
    find_instruction(text)
    assert time.perf_counter() - started < 5.0, name


@pytest.mark.parametrize(("text", "rule"), [
    ("key sk-abcdefghijklmnopqrstu here", "secret-api-key"),
    ("token sk-proj-abcdEFGH1234ijklMNOP5678", "secret-api-key"),
    ("x eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2ln y", "secret-jwt"),
])
def test_anchored_patterns_still_find_secrets(text: str, rule: str) -> None:
    assert [r for r, _ in scan_secrets(text)] == [rule]


def test_a_word_is_not_a_key() -> None:
    assert list(scan_secrets("use sk-learn and task-sk-abcdefghijklmnopqrstuvwxyz")) == []
