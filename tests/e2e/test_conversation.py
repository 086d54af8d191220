"""Issue 8 §3-§7: two identities talk through a real relay (uvicorn on loopback), and a
door's owner answers the visitor who knocked. Everything goes through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door
from tests.relay_helpers import LiveRelay, live_relay


def j(*args: str) -> tuple[int, dict[str, Any]]:
    out = run(*args, "--json")
    assert out.stdout, out.stderr
    return out.exit_code, json.loads(out.stdout)


@pytest.fixture
def relay(tmp_path: Path) -> Any:
    with live_relay(tmp_path / "relay.sqlite3") as live:
        yield live


def person(name: str, relay: LiveRelay) -> str:
    did = new_identity(name)
    assert run("id", "relay", name, relay.url).exit_code == 0
    code, doc = j("card", "publish", "--as", name)
    assert code == 0, doc
    assert doc["card"]["url"] == "" and doc["card"]["relay"] == relay.url
    return did


def test_id_show_has_relay_and_enc_pub(relay: LiveRelay) -> None:
    from muretai_cli.home import KeyStore, keys_dir

    did = person("alice", relay)
    code, doc = j("id", "show", "alice")
    assert code == 0 and doc["did"] == did and doc["relay"] == relay.url
    assert doc["encPub"] == KeyStore(keys_dir()).load("alice").signing_key().enc_pub
    code, doc = j("id", "new", "carol", "--relay", relay.url + "/")
    assert code == 0 and doc["relay"] == relay.url  # canonical form


def test_two_shells_talk_through_the_relay(relay: LiveRelay) -> None:
    alice = person("alice", relay)
    bob = person("bob", relay)
    code, sent = j("op", "--as", "alice", "dm", bob, "hello bob", "--relay", relay.url)
    assert code == 0 and sent["state"] == "queued" and sent["channel"] == "relay", sent
    assert sent["contextId"] and sent["deposit"]["attempts"] == 1
    # bob's default policy is quarantine: a stranger's first message is held, not shown
    code, drained = j("op", "--as", "bob", "turn-check")
    assert code == 0, drained
    assert drained["messages"] == [] and [h["text"] for h in drained["held"]] == ["hello bob"]
    held = drained["held"][0]
    assert held["from"] == alice and held["verified"] and held["channel"] == "relay"
    # exactly once: a second turn-check prints nothing
    assert j("op", "--as", "bob", "turn-check")[1]["held"] == []
    assert run("op", "--as", "bob", "requests", "approve", held["requestId"]).exit_code == 0
    # bob answers; alice's relay is known from her verified message (metadata.relay)
    code, reply = j("op", "--as", "bob", "dm", alice, "hi alice", "--reply-to",
                    held["messageId"])
    assert code == 0 and reply["state"] == "queued", reply
    assert reply["contextId"] == sent["contextId"] and reply["route"] == "peer-relay"
    # alice wrote first, so bob is no stranger to her: delivered straight to her inbox
    code, drained = j("op", "--as", "alice", "turn-check")
    assert code == 0 and [m["text"] for m in drained["messages"]] == ["hi alice"]
    got = drained["messages"][0]
    assert got["from"] == bob and got["replyTo"] == sent["messageId"]
    assert got["contextId"] == sent["contextId"]
    # the conversation view: both directions, oldest first
    code, view = j("op", "--as", "alice", "inbox", "--peer", bob)
    assert [(m["direction"], m["text"], m["channel"]) for m in view["messages"]] == [
        ("out", "hello bob", "relay"), ("in", "hi alice", "relay")]
    assert view["messages"][1]["replyTo"] == sent["messageId"]
    code, conns = j("op", "--as", "alice", "connections")
    assert [(c["did"], c["reachedBy"]) for c in conns["connections"]] == [(bob, "relay")]
    assert conns["connections"][0]["lastMessage"]["text"] == "hi alice"
    human = run("op", "--as", "alice", "inbox")
    assert "  | hi alice" in human.stdout and "relay" in human.stdout


def test_the_doors_owner_answers_the_visitor_who_knocked(relay: LiveRelay) -> None:
    vis = person("vis", relay)
    with live_door("open") as door:
        code, sent = j("op", "--as", "vis", "dm", door.did, "where is my order?",
                       "--connect", door.base)
        assert code == 0 and sent["state"] == "delivered", sent
        inbox = j("op", "--as", "door", "inbox")[1]["messages"]
        assert inbox[0]["text"] == "where is my order?"
        code, answer = j("op", "--as", "door", "dm", vis, "It ships Friday.", "--reply-to",
                         sent["messageId"])
        assert code == 0 and answer["state"] == "queued", answer
    code, drained = j("op", "--as", "vis", "turn-check")
    assert code == 0 and [m["text"] for m in drained["messages"]] == ["It ships Friday."]
    got = drained["messages"][0]
    assert got["from"] == door.did and got["verified"] and got["replyTo"] == sent["messageId"]
    human = run("op", "--as", "vis", "inbox", "--context", sent["contextId"])
    assert f"reply to {sent['messageId']}" in human.stdout


def test_policy_is_a_setting(relay: LiveRelay) -> None:
    alice = person("alice", relay)
    person("bob", relay)
    assert j("op", "--as", "bob", "policy")[1]["policy"] == "quarantine"
    assert j("op", "--as", "bob", "policy", "closed")[1]["policy"] == "closed"
    bob = j("id", "show", "bob")[1]["did"]
    assert j("op", "--as", "alice", "dm", bob, "let me in", "--relay", relay.url)[0] == 0
    code, drained = j("op", "--as", "bob", "turn-check")
    assert code == 0 and drained["messages"] == [] and drained["held"] == []
    assert [(r["from"], r["reason"]["code"]) for r in drained["refused"]] == [
        (alice, "introduction-required")]
    assert j("op", "--as", "bob", "policy", "open")[0] == 0
    assert j("op", "--as", "alice", "dm", bob, "second try", "--relay", relay.url)[0] == 0
    assert [m["text"] for m in j("op", "--as", "bob", "turn-check")[1]["messages"]] == [
        "second try"]
    assert run("op", "--as", "bob", "policy", "wide-open").exit_code == 2


def test_an_answer_goes_only_where_the_card_names_that_relay(relay: LiveRelay,
                                                             tmp_path: Path) -> None:
    """metadata.relay is only a place to look: a card there that does not name that relay
    (here: published at another relay) is refused and nothing is sent."""
    vis = new_identity("vis")
    assert run("id", "relay", "vis", relay.url).exit_code == 0  # says this relay ...
    with live_relay(tmp_path / "other.sqlite3") as other:
        assert run("id", "relay", "vis", other.url).exit_code == 0
        assert j("card", "publish", "--as", "vis")[0] == 0  # ... but the card names other
        assert run("id", "relay", "vis", relay.url).exit_code == 0
        # copy the card to the first relay: same signed envelope, naming the other relay
        import httpx

        env = httpx.get(f"{other.url}/card/{vis}").json()
        assert relay.post("card", env).status_code == 200
        with live_door("open") as door:
            code, sent = j("op", "--as", "vis", "dm", door.did, "hi", "--connect", door.base)
            assert code == 0, sent
            code, answer = j("op", "--as", "door", "dm", vis, "answer", "--reply-to",
                             sent["messageId"])
            assert code == 1 and answer["error"] == "relay-not-on-card", answer
