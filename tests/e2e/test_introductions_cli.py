"""Introductions at the command line, against real doors on loopback: asking (`op intro
ask`, shown to the introducer as a request), vouching (`op introduce`: requested from a live
request, else only with --proactive), holding (`op intros`) and using (a first `op dm`
attaches the credential and finds the door the gift named), and the owner's view of a held
first contact's vouch (`op requests`), hostile text made inert."""

from __future__ import annotations

import json
import time
from contextlib import ExitStack

from muretai_cli.artifacts.introduction import mint_introduction
from muretai_cli.artifacts.message import build_message, build_message_send
from muretai_cli.seam import SigningKey, sign_envelope
from tests.cli_helpers import run, run_json
from tests.door_helpers import Live, live_door


def _ok(*args: str) -> str:
    result = run(*args)
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return result.stdout


def _connect(me: str, door: Live) -> None:
    """``me`` writes to ``door`` once, so its door is remembered (a connection)."""
    _ok("op", "--as", me, "dm", door.did, f"hello from {me}", "--connect", door.base)


def test_introduce_without_a_live_request_is_refused_unless_proactive() -> None:
    with ExitStack() as doors:
        carol = doors.enter_context(live_door("open", name="carol"))
        bob = doors.enter_context(live_door("open", name="bob"))
        run("id", "new", "alice")
        _connect("alice", carol)
        code, doc = run_json("op", "--as", "alice", "introduce", carol.did, "--to", bob.did)
        assert code == 1 and doc["error"] == "no-live-request", doc
        assert run_json("op", "--as", "alice", "introduce", "list")[1]["issued"] == []
        code, doc = run_json("op", "--as", "alice", "introduce", carol.did, "--to", bob.did,
                             "--proactive", "--trust", "0.25")
        assert code == 0, doc
        assert (doc["provenance"], doc["trustLevelBp"]) == ("proactive", 250)
        assert doc["gift"]["state"] == "delivered"
        issued = run_json("op", "--as", "alice", "introduce", "list")[1]["issued"]
        assert [i["id"] for i in issued] == [doc["id"]]


def test_ask_vouch_and_the_first_dm_carries_the_introduction() -> None:
    with ExitStack() as doors:
        alice = doors.enter_context(live_door("open", name="alice"))
        carol = doors.enter_context(live_door("open", name="carol"))
        bob = doors.enter_context(live_door("introduced", name="bob"))
        _ok("op", "--as", "bob", "senders", "allow", alice.did)  # bob knows alice
        for me, door in (("carol", alice), ("alice", carol), ("alice", bob)):
            _connect(me, door)
        # a stranger's first DM is refused at bob's door, the remedy named
        refused = run("op", "--as", "carol", "dm", bob.did, "hi bob", "--connect", bob.base)
        assert refused.exit_code == 4 and "intro ask" in refused.stderr
        _ok("op", "--as", "carol", "intro", "ask", alice.did, "--to", bob.did, "--note",
            "about ledgers")
        code, inbox = run_json("op", "--as", "alice", "inbox", "--peer", carol.did)
        asked = [m["introductionRequest"] for m in inbox["messages"]
                 if m.get("introductionRequest")]
        assert asked == [{"from": carol.did, "for": bob.did, "note": "about ledgers"}]
        shown = _ok("op", "--as", "alice", "inbox", "--peer", carol.did)
        assert f"asks you to introduce them to {bob.did}" in shown
        assert "introduce-me-to:" not in shown
        code, vouched = run_json("op", "--as", "alice", "introduce", carol.did, "--to",
                                 bob.did, "--expertise", "ledgers")
        assert code == 0 and vouched["provenance"] == "requested", vouched
        assert vouched["targetReach"]["url"] == bob.base
        held = run_json("op", "--as", "carol", "intros")[1]["held"]
        assert [(h["id"], h["target"], h["url"]) for h in held] == \
            [(vouched["id"], bob.did, bob.base)]
        # carol's first DM to bob: no route given, none known but the gift's; the held
        # credential rides it, and bob's door (policy introduced) admits her
        code, sent = run_json("op", "--as", "carol", "dm", bob.did, "hello bob")
        assert code == 0 and sent["state"] == "delivered", sent
        store = bob.store()
        try:
            assert store.introduced_by(carol.did) == alice.did
        finally:
            store.close()


HOSTILE = "ledgers\x1b[2J\u202egnp.exe\u200bhidden"


def test_a_held_vouch_is_shown_to_the_owner_with_hostile_text_made_inert() -> None:
    with live_door("introduced", name="bob") as bob:
        stranger, carol = SigningKey.generate(), SigningKey.generate()
        now = int(time.time())
        vc = mint_introduction(stranger, subject=carol.did, to=bob.did, now=now,
                               expertise=[HOSTILE], trust=600)
        env = sign_envelope(carol, to=bob.did, text="hi \x1b]0;owned\x07 bob\u202e", timestamp=now)
        msg = build_message(env)
        msg["metadata"]["vc"] = vc
        doc = bob.rpc(build_message_send(msg, 1))
        assert doc["error"]["code"] == -32014, doc
        text = _ok("op", "--as", "bob", "requests")
        assert f"vouched for by {stranger.did}, who is not your contact" in text
        assert f"introduces {carol.did} to {bob.did}; trust 0.6" in text
        assert "proactive" in text
        for bad in ("\x1b", "\u202e", "\u200b", "\x07"):
            assert bad not in text
        raw = run("op", "--as", "bob", "requests", "list", "--json").stdout
        for bad in ("\x1b", "\u202e", "\u200b", "\x07"):
            assert bad not in raw
        [row] = json.loads(raw)["requests"]
        assert row["vouch"]["expertise"] == [HOSTILE]  # the value kept, only escaped
        assert row["vouch"]["verdict"] == "not-a-contact"
