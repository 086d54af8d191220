"""What the CLI renders from user and peer text: rich reads none of it as markup or emoji, a
multi-line message cannot forge a line of output, a refusal and a dropped envelope are named
readably, an approved message shows when it arrived.

Each test pins one finding and fails without its fix.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from muretai_cli.cli import app
from muretai_cli.seam import SigningKey
from tests.handoff_helpers import SITE, cli, write

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
    from muretai_cli.inbox.arrival import Arrival
    from muretai_cli.inbox.store import IdentityStore, db_path

    door = KeyStore(keys_dir()).create("door")
    sender = SigningKey(b"\x09" * 32)
    now = int(time.time())
    env = Arrival.from_json({"from": sender.did, "messageId": f"m-{hold}", "contextId": None,
                             "text": text, "timestamp": now, "sig": "x"})
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


# ---- 6: the door's reason is shown in human output (safely) -------------------------------

def test_peer_refusal_shows_the_reason() -> None:
    from muretai_cli.cli._visitout import peer_refusal_lines

    data = {"rpcError": {"code": -32011, "message": "Contact grant refused",
                         "data": {"reason": "exhausted"}}}
    assert peer_refusal_lines(data)[0] == \
        "  door error -32011: Contact grant refused (reason: exhausted)"
    hostile = {"rpcError": {"code": -32011, "message": "x", "data": {"reason": "a\x1b[2Jb\nc"}}}
    assert peer_refusal_lines(hostile)[0].endswith("(reason: a?[2Jb?c)")


# ---- 9: an approved message shows when it arrived (and when it was approved) ------------------

def test_inbox_shows_arrival_time_of_an_approved_message() -> None:
    import time

    from muretai_cli.home import KeyStore, keys_dir
    from muretai_cli.inbox.arrival import Arrival
    from muretai_cli.inbox.store import IdentityStore, db_path

    door = KeyStore(keys_dir()).create("door")
    sender = SigningKey(b"\x0c" * 32)
    arrived = int(time.time()) - 7200
    store = IdentityStore(db_path(door.did))
    try:
        rid = store.hold(Arrival.from_json({
            "from": sender.did, "messageId": "m-1", "contextId": None, "text": "first contact",
            "timestamp": arrived, "sig": "x"}), arrived)
        assert rid is not None
        assert store.accept(Arrival.from_json({
            "from": sender.did, "messageId": "m-0", "contextId": None, "text": "direct",
            "timestamp": arrived + 60, "sig": "x"}), arrived + 60)
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
