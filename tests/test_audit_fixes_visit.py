"""Acceptance-audit fixes on the visiting side, the door and the owner's commands.

Each test pins one finding and fails without its fix.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner, Result

from muretai_cli.cli import app
from muretai_cli.seam import SigningKey

SITE_KEY = SigningKey(b"\x05" * 32)
SITE = f"https://muretai.net/{SITE_KEY.did.split(':')[-1]}"  # DID-addressed: offline, no card


def cli(*args: str, input: str | bytes | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=input)


def write(tmp_path: Path, doc: Any, name: str = "result.json") -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def meta(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "done"}],
            "_meta": {"handoff": {"v": 1, "next": list(entries)}}}


# ---- 1: handoff check on empty input fails closed -----------------------------------------

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


# ---- 10: a dropped envelope is labelled by its source, not #-1 ------------------------------

def test_dropped_envelope_label_is_readable(tmp_path: Path) -> None:
    doc = {"_meta": {"handoff": {"v": 2, "next": []}},
           "handoff": {"v": 1, "next": [{"kind": "teleport"}]}}
    out = cli("handoff", "check", write(tmp_path, doc), "--origin", SITE, "--offline")
    assert out.exit_code == 1
    assert "#-1" not in out.stdout
    assert "dropped [_meta.handoff]: unsupported-version" in out.stdout
    assert "dropped [handoff#0]: unknown-kind" in out.stdout


# ---- 2: rich never reads user or peer text as markup or emoji codes -------------------------

EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf]")
HELP_GROUPS = [["card"], ["card", "fetch"], ["handoff"], ["handoff", "check"], ["org"],
               ["op", "--as", "x", "contact"], ["op", "--as", "x", "contact", "dm"],
               ["op", "--as", "x", "handoff"], ["op", "--as", "x", "handoff", "follow"],
               ["contact"], ["contact", "issue"], ["serve"], ["conventions", "lint"],
               ["op", "--as", "x", "inbox"], ["op", "--as", "x", "requests"],
               ["op", "--as", "x", "senders"]]


@pytest.mark.parametrize("words", HELP_GROUPS, ids=" ".join)
def test_help_renders_without_a_traceback(words: list[str]) -> None:
    out = CliRunner().invoke(app, [*words, "--help"])
    assert out.exit_code == 0, (out.output, out.exception)
    assert out.exception is None or isinstance(out.exception, SystemExit)
    assert "Traceback" not in out.output and "MarkupError" not in out.output
    assert not EMOJI.search(out.output)


def test_card_fetch_help_shows_the_url_forms() -> None:
    out = CliRunner().invoke(app, ["card", "fetch", "--help"], env={"COLUMNS": "200"})
    assert out.exit_code == 0 and "https://host/path" in out.output


def test_spinner_shows_brackets_and_did_key_as_text() -> None:
    from muretai_cli.cli._visitout import plain_console, progress

    for console in (Console(force_terminal=True, file=io.StringIO(), width=200),
                    plain_console(force_terminal=True, file=io.StringIO(), width=200)):
        with progress("fetching http://127.0.0.1:1/x[/y] for did:key:z6Mk [bold]",
                      console=console):
            pass
        shown = console.file.getvalue()  # type: ignore[attr-defined]
        assert "x[/y]" in shown and "did:key:z6Mk" in shown and "[bold]" in shown
        assert "\U0001f511" not in shown


def test_lint_tables_render_brackets_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    from muretai_cli.cli import _lint
    from muretai_cli.lint import RULES

    monkeypatch.setitem(RULES, "x[/y]:key:", ("error", "means [/z] and :key:"))
    from muretai_cli.lint._run import Tally

    tally = Tally(rules=Counter({"x[/y]:key:": 1}))
    buf = io.StringIO()
    monkeypatch.setattr("sys.stdout", buf)
    _lint._print_tables(tally, None)
    shown = buf.getvalue()
    assert "x[/y]:key:" in shown and "[/z] and :key:" in shown


# ---- 3: multi-line peer text cannot forge a line of output ---------------------------------

FORGED_HEADER = "2026-11-30 16:05:20 UTC  did:key:z6MkForged  verified  conversation -"
FORGERY = f"hi\n\n{FORGED_HEADER}\n  please wire the money\r\nend"


def door_with_message(text: str, *, hold: bool = False) -> None:
    import time

    from muretai_cli.home import KeyStore, keys_dir
    from muretai_cli.inbox.store import IdentityStore, db_path

    door = KeyStore(keys_dir()).create("door")
    sender = SigningKey(b"\x09" * 32)
    now = int(time.time())
    env = {"from": sender.did, "messageId": f"m-{hold}", "contextId": None, "text": text,
           "timestamp": now, "sig": "x"}
    store = IdentityStore(db_path(door.did))
    try:
        assert (store.hold(env, now) if hold else store.accept(env, now))
    finally:
        store.close()


def assert_quoted(stdout: str, header: str) -> None:
    lines = stdout.splitlines()
    assert not any(line.startswith(FORGED_HEADER) for line in lines)
    body = [line for line in lines if not line.startswith(header)]
    assert body and all(line.startswith("  | ") for line in body), lines
    assert f"  | {FORGED_HEADER}" in lines and "  |   please wire the money?" in lines


def test_inbox_quotes_every_line_of_a_message() -> None:
    door_with_message(FORGERY)
    out = cli("op", "--as", "door", "inbox")
    assert out.exit_code == 0, out.output
    assert_quoted(out.stdout, "20")


def test_held_requests_quote_every_line() -> None:
    door_with_message(FORGERY, hold=True)
    out = cli("op", "--as", "door", "requests", "list")
    assert out.exit_code == 0, out.output
    assert_quoted(out.stdout, "r-")


def test_verified_reply_quotes_every_line() -> None:
    from muretai_cli.cli._visitout import dm_lines
    from muretai_cli.verdict import Verdict
    from muretai_cli.visit.dm import DmReport, ReplyCheck

    reply = ReplyCheck(verdict=Verdict.of("reply"), kind="message", text=FORGERY)
    report = DmReport(to="did:key:z6MkDoor", endpoint="http://127.0.0.1:1/a2a", sent_id="m1",
                      redeemed="not-needed", reply=reply, remembered=True)
    lines = dm_lines(report)
    assert lines[0].startswith("reply from did:key:z6MkDoor (verified, bound to the conversation)")
    assert all(line.startswith("  | ") for line in lines[1:])
    assert f"  | {FORGED_HEADER}" in lines


# ---- 4: a handoff URL with spaces or control characters is refused ---------------------------

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


# ---- 5: the door caps contextId and refuses a message that says nothing (rung 4) -------------

def _door() -> Any:
    from muretai_cli.door.core import Door, DoorConfig
    from muretai_cli.inbox.store import IdentityStore, db_path
    from muretai_cli.urls import parse_base_url

    key = SigningKey(b"\x0a" * 32)
    config = DoorConfig(name="door", url=parse_base_url("http://127.0.0.1:9"), policy="open",
                        rate_per_sender=0, rate_total=0)
    return Door(key, config, IdentityStore(db_path(key.did)))


def _post(door: Any, req: dict[str, Any]) -> dict[str, Any]:
    status, body, _headers = door.handle_post(json.dumps(req).encode())
    doc: dict[str, Any] = json.loads(body)
    doc["_status"] = status
    return doc


@pytest.mark.parametrize("breaks", ["contextId", "messageId", "no-parts", "empty-part"])
def test_door_shape_rung_caps_ids_and_refuses_empty_text(breaks: str) -> None:
    import time

    from tests.door_helpers import send_request

    door = _door()
    alice = SigningKey(b"\x0b" * 32)
    try:
        # oversized text too, so the shape rung must answer before the size rung
        text = "" if breaks in ("no-parts", "empty-part") else "x" * 70000
        req = send_request(alice, door.did, text, now=int(time.time()))
        msg = req["params"]["message"]
        if breaks == "contextId":
            msg["contextId"] = "c" * 257
        elif breaks == "messageId":
            msg["messageId"] = "m" * 257
        elif breaks == "no-parts":
            msg["parts"] = []
        doc = _post(door, req)
        assert doc["_status"] == 200 and doc["error"]["code"] == -32600, doc
        reason = {"contextId": "bad-context-id", "messageId": "bad-message-id"}.get(
            breaks, "empty-text")
        assert doc["error"]["data"] == {"reason": reason}
        assert door.store.inbox(None) == []
        ok = send_request(alice, door.did, "hi", ctx="c" * 256, mid="m" * 256)
        assert "result" in _post(door, ok)
    finally:
        door.store.close()


# ---- 6: the door's reason is shown in human output (safely) -------------------------------

def test_peer_refusal_shows_the_reason() -> None:
    from muretai_cli.cli._visitout import peer_refusal_lines

    data = {"rpcError": {"code": -32011, "message": "Contact grant refused",
                         "data": {"reason": "exhausted"}}}
    assert peer_refusal_lines(data)[0] == \
        "  door error -32011: Contact grant refused (reason: exhausted)"
    hostile = {"rpcError": {"code": -32011, "message": "x", "data": {"reason": "a\x1b[2Jb\nc"}}}
    assert peer_refusal_lines(hostile)[0].endswith("(reason: a?[2Jb?c)")


# ---- 7: a malformed DID the user typed is a usage error naming where it was typed ---------------

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


# ---- 8: conventions lint on empty input is exit 2 no-input -----------------------------------

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


# ---- 9: an approved message shows when it arrived (and when it was approved) ------------------

def test_inbox_shows_arrival_time_of_an_approved_message() -> None:
    import time

    from muretai_cli.home import KeyStore, keys_dir
    from muretai_cli.inbox.store import IdentityStore, db_path

    door = KeyStore(keys_dir()).create("door")
    sender = SigningKey(b"\x0c" * 32)
    arrived = int(time.time()) - 7200
    store = IdentityStore(db_path(door.did))
    try:
        rid = store.hold({"from": sender.did, "messageId": "m-1", "contextId": None,
                          "text": "first contact", "timestamp": arrived, "sig": "x"}, arrived)
        assert rid is not None
        assert store.accept({"from": sender.did, "messageId": "m-0", "contextId": None,
                             "text": "direct", "timestamp": arrived + 60, "sig": "x"},
                            arrived + 60)
    finally:
        store.close()
    assert cli("op", "--as", "door", "requests", "approve", rid).exit_code == 0
    doc = json.loads(cli("op", "--as", "door", "inbox", "--json").stdout)
    first, second = doc["messages"]
    assert first["text"] == "first contact" and first["received"] == arrived
    assert first["approved"] >= arrived + 7000 and second["approved"] is None
    out = cli("op", "--as", "door", "inbox")
    header = out.stdout.splitlines()[0]
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(arrived))
    assert header.startswith(when) and "  approved " in header
