"""``op --as ME inbox --after SEQ [--wait [S]]`` as the command line runs it (issue 18 §1):
each entry with its seq, the document with ``latest``; two readers see the same entries; a
wait (a real process) is woken by another process's commit; a timed-out wait is ok, exit 0;
``--wait=N`` and ``--wait N`` both parse (for ``turn-check`` too)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from muretai_cli.inbox.arrival import Arrival
from muretai_cli.inbox.store import open_identity_store
from muretai_cli.seam import SigningKey
from tests.cli_helpers import in_process, new_identity

NOW = 1_800_000_000
PEER = SigningKey.generate().did


def deliver(me: str, mid: str, **extra: Any) -> None:
    store = open_identity_store(me)
    try:
        assert store.accept(Arrival.from_json(
            {"from": PEER, "messageId": mid, "contextId": "c-1", "text": f"t {mid}",
             "timestamp": NOW, "sig": "s", **extra}), NOW)
    finally:
        store.close()


def inbox_json(*args: str) -> tuple[int, dict[str, Any]]:
    done = in_process("op", "--as", "me", "inbox", *args, "--json")
    return done.returncode, json.loads(done.stdout)


def test_two_readers_see_the_same_entries_by_seq() -> None:
    me = new_identity("me")
    for mid in ("m1", "m2", "m3"):
        deliver(me, mid, replyTo="q" if mid == "m3" else None)
    code, first = inbox_json("--after", "0")
    assert code == 0 and next(iter(first)) == "ok" and first["ok"] is True
    seqs = [e["seq"] for e in first["entries"]]
    assert first["latest"] == seqs[-1] and seqs == sorted(seqs)
    assert inbox_json("--after", "0") == (0, first)  # a second reader is not robbed
    code, later = inbox_json("--after", str(seqs[0]), "--limit", "1")
    assert [e["messageId"] for e in later["entries"]] == ["m2"] and later["more"]
    code, answers = inbox_json("--after", "0", "--reply-to", "q")
    assert [e["messageId"] for e in answers["entries"]] == ["m3"]
    # today's view is unchanged by cursor reads, and still has no seq
    code, plain = inbox_json()
    assert code == 0 and len(plain["messages"]) == 3 and "latest" not in plain


def test_wait_forms_parse_and_a_timed_out_wait_is_ok() -> None:
    me = new_identity("me")
    deliver(me, "m1")
    latest = inbox_json("--after", "0")[1]["latest"]
    for form in (["--wait=1"], ["--wait", "1"]):
        code, doc = inbox_json("--after", str(latest), *form)
        assert code == 0 and doc["ok"] is True and doc["entries"] == []
        assert doc["latest"] == latest and doc["timedOut"] is True
    bad = in_process("op", "--as", "me", "inbox", "--after", "0", "--wait=31")
    assert bad.returncode == 2
    # turn-check takes the same two spellings (it fails later, for want of a relay)
    for form in (["--wait=1"], ["--wait", "1"]):
        done = in_process("op", "--as", "me", "turn-check", *form, "--json")
        assert json.loads(done.stdout)["error"] == "no-relay", done.stdout


def test_a_waiting_reader_is_woken_by_another_process() -> None:
    me = new_identity("me")
    deliver(me, "m1")
    latest = inbox_json("--after", "0")[1]["latest"]
    waiter = subprocess.Popen(
        [sys.executable, "-m", "muretai_cli", "op", "--as", "me", "inbox", "--after",
         str(latest), "--wait", "25", "--json"], stdout=subprocess.PIPE, text=True,
        env=dict(os.environ))
    deliver(me, "m2")
    committed = time.monotonic()
    out, _ = waiter.communicate(timeout=40)
    assert waiter.returncode == 0
    doc = json.loads(out)
    assert [e["messageId"] for e in doc["entries"]] == ["m2"] and doc["timedOut"] is False
    # woken (or, if it started after the commit, behind): never the 25 s timeout
    assert time.monotonic() - committed < 15
