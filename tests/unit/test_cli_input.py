"""The CLI on input it cannot use: empty input, a malformed DID argument, a handoff URL with
control characters: each a named usage error or refusal, never accepted.

Each test pins one finding and fails without its fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from muretai_cli.seam import SigningKey
from tests.handoff_helpers import SITE, SITE_KEY, cli, meta, write


def test_handoff_check_empty_stdin_is_no_input() -> None:
    for empty in ("", "\n\n  \n"):
        out = cli("handoff", "check", "-", "--origin", SITE, "--offline", "--json",
                  input=empty)
        assert out.exit_code == 2, out.output
        doc = json.loads(out.stdout)
        assert doc["ok"] is False and doc["error"] == "no-input"
        text = cli("handoff", "check", "-", "--origin", SITE, "--offline", input=empty)
        assert text.exit_code == 2 and "no-input" in text.stderr


def test_handoff_check_closing_note_counts_outcomes(tmp_path: Path) -> None:
    good = write(tmp_path, meta({"kind": "dm", "to": SITE_KEY.did}), "good.json")
    missing = str(tmp_path / "missing.json")
    out = cli("handoff", "check", good, missing, "--origin", SITE, "--offline")
    assert out.exit_code == 2
    assert "no followable dm entry (exit" not in out.stderr
    assert "exit 2: 2 input(s): 1 followable, 1 unreadable or malformed" in out.stderr
    other = write(tmp_path, meta({"kind": "dm", "to": SigningKey(b"\x06" * 32).did}), "o.json")
    out = cli("handoff", "check", good, other, "--origin", SITE, "--offline")
    assert out.exit_code == 1
    assert "exit 1: 2 input(s): 1 followable, 1 with no followable dm entry" in out.stderr


@pytest.mark.parametrize("bad", ["\x1b[31m", " ", "\t", "\x7f", "\x85", "\u202e"])
def test_handoff_url_with_control_characters_is_refused(tmp_path: Path, bad: str) -> None:
    doc = meta({"kind": "ui", "url": f"{SITE}/good/{bad}page"},
               {"kind": "a2a", "to": SITE_KEY.did, "endpoint": f"{SITE}/a2a{bad}"},
               {"kind": "ui", "url": f"{SITE}/good/page"})
    out = cli("handoff", "check", write(tmp_path, doc), "--origin", SITE, "--offline",
              "--person", "--json")
    item = json.loads(out.stdout)["results"][0]
    # refused either way: dropped when parsed, or judged bad-url; never an acceptable entry
    dropped = {d["index"] for d in item["dropped"]}
    judged = {e["entry"]["index"]: [r["code"] for r in e["reasons"] if r["severity"] == "error"]
              for e in item["entries"]}
    for index in (0, 1):
        assert index in dropped or judged[index] == ["bad-url"], item
    assert judged[2] == [] and out.exit_code == 1
    text = cli("handoff", "check", write(tmp_path, doc), "--origin", SITE, "--offline",
               "--person")
    assert "\x1b" not in text.stdout and "\u202e" not in text.stdout


@pytest.mark.parametrize(("argv", "name"), [
    (["card", "fetch", "http://127.0.0.1:1", "--did", "garbage"], "--did"),
    (["op", "--as", "alice", "contact", "dm", "did:key:zzz", "hi",
      "--connect", "http://127.0.0.1:1"], "DID"),
    (["org", "trust", "did:key:zzz", "--name", "x"], "DID"),
    (["org", "untrust", "garbage"], "DID"),
    (["org", "attest", "--as", "alice", "--member", "did:key:z6Mk", "--name", "x"], "--member"),
])
def test_malformed_did_argument_is_exit_2(argv: list[str], name: str) -> None:
    assert cli("id", "new", "alice").exit_code == 0
    out = cli(*argv)
    assert out.exit_code == 2, out.output
    assert "bad-did" in out.stderr and f"{name} " in out.stderr
    doc = json.loads(cli(*argv, "--json").stdout)
    assert doc["ok"] is False and doc["error"] == "bad-did"


@pytest.mark.parametrize("empty", [b"", b"\n  \n", b"[]"])
def test_lint_empty_input_is_no_input(tmp_path: Path, empty: bytes) -> None:
    out = cli("conventions", "lint", "-", input=empty)
    assert out.exit_code == 2, out.output
    assert "no-input" in out.stderr and "linted" not in out.stdout
    path = tmp_path / "capture.jsonl"
    path.write_bytes(empty)
    out = cli("conventions", "lint", str(path), "--json")
    assert out.exit_code == 2
    doc = json.loads(out.stdout)
    assert doc["ok"] is False and doc["error"] == "no-input"


def test_lint_dev_null_is_no_input() -> None:
    out = cli("conventions", "lint", "/dev/null")
    assert out.exit_code == 2 and "no-input" in out.stderr
