"""Issue 18 §1: ``op dm PEER TEXT --wait-reply [S]`` waits for the reply to that message.

Real doors and a real relay on loopback; the waiting ``op dm`` is a real process, so the
reply reaches it the ways it would: inline, by a door POST to my own door (another process
commits it), or through my relay mailbox (the waiting process drains it).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from muretai_cli.door.respond import OnMessage
from tests.cli_helpers import muretai, new_identity, run
from tests.door_helpers import Live, live_door
from tests.relay_helpers import live_relay
from tests.servers import ROOT
from tests.waiting import wait_until


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    out = run(*args, "--json")
    assert out.stdout, out.stderr
    return out.exit_code, json.loads(out.stdout)


@contextmanager
def waiting(*argv: str) -> Iterator[subprocess.Popen[str]]:
    """``muretai ARGV --json`` running in its own process (stdout, stderr piped)."""
    proc = subprocess.Popen([sys.executable, "-m", "muretai_cli", *argv, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env=dict(os.environ))
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _result(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any]]:
    out, err = proc.communicate(timeout=60)
    assert out, err
    return proc.returncode, json.loads(out)


def _received(door: Live, sender: str, count: int = 1) -> list[dict[str, Any]]:
    """The messages ``door`` holds from ``sender``, once it holds ``count``."""
    def found() -> list[dict[str, Any]]:
        store = door.store()
        try:
            rows = [m for m in store.conversation(peer=sender) if m["direction"] == "in"]
        finally:
            store.close()
        return rows if len(rows) >= count else []
    return wait_until(found, f"{door.name} holds {count} message(s) from {sender}")


def test_an_inline_reply_is_the_reply_at_once(tmp_path: Path) -> None:
    script = tmp_path / "answer.py"
    script.write_text("import json, sys\nprint('you said: ' + json.load(sys.stdin)['text'])\n")
    new_identity("me")
    cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    with live_door("open", name="shop", on_message=OnMessage(cmd, timeout=10)) as shop:
        started = time.monotonic()
        code, doc = _json("op", "--as", "me", "dm", shop.did, "hi", "--connect", shop.base,
                          "--wait-reply", "30")
        assert code == 0, doc
        assert time.monotonic() - started < 25  # not the 30 s the wait may take
        assert doc["timedOut"] is False and doc["receipt"] is None
        assert doc["reply"]["verified"] and doc["reply"]["text"] == "you said: hi"


def test_a_later_reply_by_a_post_to_my_door_ignoring_what_is_no_reply() -> None:
    new_identity("carol")
    with live_door("open", name="me") as mine, live_door("open", name="shop") as shop:
        me = mine.did
        with waiting("op", "--as", "me", "dm", shop.did, "where is my order?", "--connect",
                     shop.base, "--wait-reply", "25") as proc:
            sent = _received(shop, me)[0]
            # the peer writes, but not in answer to it; another DID claims to answer it
            assert run("op", "--as", "shop", "dm", me, "unrelated news", "--connect",
                       mine.base).exit_code == 0
            assert run("op", "--as", "carol", "dm", me, "me too", "--reply-to",
                       sent["messageId"], "--connect", mine.base).exit_code == 0
            assert proc.poll() is None  # still waiting
            assert run("op", "--as", "shop", "dm", me, "It ships Friday.", "--reply-to",
                       sent["messageId"]).exit_code == 0
            code, doc = _result(proc)
    assert code == 0, doc
    assert doc["state"] == "delivered" and doc["receipt"]["verified"], doc
    reply = doc["reply"]
    assert reply["text"] == "It ships Friday." and reply["from"] == shop.did
    assert reply["replyTo"] == doc["messageId"] and reply["channel"] == "door"
    assert reply["verified"] and doc["timedOut"] is False and isinstance(reply["seq"], int)


def test_with_context_any_message_of_the_conversation_from_that_peer() -> None:
    new_identity("carol")
    with live_door("open", name="me") as mine, live_door("open", name="shop") as shop:
        me = mine.did
        context = "c-" + "ab" * 16
        with waiting("op", "--as", "me", "dm", shop.did, "hello", "--connect", shop.base,
                     "--context", context, "--wait-reply", "25") as proc:
            _received(shop, me)
            assert run("op", "--as", "carol", "dm", me, "not the peer", "--context", context,
                       "--connect", mine.base).exit_code == 0
            assert proc.poll() is None
            assert run("op", "--as", "shop", "dm", me, "in the conversation", "--context",
                       context, "--connect", mine.base).exit_code == 0
            code, doc = _result(proc)
    assert code == 0, doc
    assert doc["reply"]["text"] == "in the conversation" and doc["reply"]["from"] == shop.did


def test_a_later_reply_through_my_relay(tmp_path: Path) -> None:
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        for name in ("me", "bob"):
            new_identity(name)
            assert run("id", "relay", name, relay.url).exit_code == 0
            assert run("card", "publish", "--as", name).exit_code == 0
        assert run("op", "--as", "bob", "policy", "open").exit_code == 0
        bob = _json("id", "show", "bob")[1]["did"]
        with waiting("op", "--as", "me", "dm", bob, "hello bob", "--relay", relay.url,
                     "--wait-reply", "25") as proc:
            def drained() -> list[dict[str, Any]]:
                return list(_json("op", "--as", "bob", "turn-check")[1]["messages"])
            got = wait_until(drained, "bob's turn-check has the message", timeout=30)[0]
            assert run("op", "--as", "bob", "dm", got["from"], "hi me", "--reply-to",
                       got["messageId"]).exit_code == 0
            code, doc = _result(proc)
    assert code == 0, doc
    assert doc["state"] == "queued" and doc["receipt"] is None
    assert doc["reply"]["text"] == "hi me" and doc["reply"]["channel"] == "relay"
    assert doc["reply"]["from"] == bob and doc["reply"]["replyTo"] == doc["messageId"]


def test_no_reply_in_time_is_a_timeout_with_the_send_as_it_went() -> None:
    new_identity("me")
    with live_door("open", name="shop") as shop:
        code, doc = _json("op", "--as", "me", "dm", shop.did, "anyone?", "--connect",
                          shop.base, "--wait-reply", "1")
        assert code == 5, doc
        assert doc["ok"] is False and doc["error"] == "timeout" and doc["timedOut"] is True
        assert doc["state"] == "delivered" and doc["reply"] is None
        assert doc["receipt"]["verified"] and isinstance(doc["latest"], int)
        # --wait-reply=N, as a real process parses it (main splits it as --wait N)
        out = muretai("op", "--as", "me", "dm", shop.did, "still there?", "--wait-reply=1")
        assert out.returncode == 5, out.stderr
        assert out.stdout.startswith("receipt from") and "error: timeout" in out.stderr


def test_a_follower_holding_my_listener_is_left_alone_and_its_drain_is_read(
        tmp_path: Path) -> None:
    from muretai_cli.home import listener_state

    with live_relay(tmp_path / "relay.sqlite3") as relay:
        for name in ("me", "bob"):
            new_identity(name)
            assert run("id", "relay", name, relay.url).exit_code == 0
            assert run("card", "publish", "--as", name).exit_code == 0
        assert run("op", "--as", "bob", "policy", "open").exit_code == 0
        me = _json("id", "show", "me")[1]["did"]
        bob = _json("id", "show", "bob")[1]["did"]
        with waiting("op", "--as", "me", "turn-check", "--follow") as follower:
            wait_until(lambda: listener_state(me) == "elsewhere", "the follower listens")
            with waiting("op", "--as", "me", "dm", bob, "hello bob", "--relay", relay.url,
                         "--wait-reply", "25") as proc:
                def drained() -> list[dict[str, Any]]:
                    return list(_json("op", "--as", "bob", "turn-check")[1]["messages"])
                got = wait_until(drained, "bob's turn-check has the message", timeout=30)[0]
                assert run("op", "--as", "bob", "dm", me, "hi me", "--reply-to",
                           got["messageId"]).exit_code == 0
                code, doc = _result(proc)
            assert follower.poll() is None  # not superseded: it stored the reply
    assert code == 0, doc
    assert doc["reply"]["text"] == "hi me" and doc["reply"]["channel"] == "relay"
