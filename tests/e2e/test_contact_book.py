"""Issue 18 §1: a peer is remembered. One contact book per identity: after `join`, an
approval, or a DM with `--relay`, `op dm PEER TEXT` works again with no URL, by DID or by
the owner's name; an unsigned `metadata.relay` never becomes a peer's reach. Real relays
and doors on loopback, everything through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door
from tests.relay_helpers import LiveRelay, live_relay


def j(*args: str) -> tuple[int, dict[str, Any]]:
    out = run(*args, "--json")
    assert out.stdout, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return out.exit_code, doc


@pytest.fixture
def relay(tmp_path: Path) -> Any:
    with live_relay(tmp_path / "relay.sqlite3") as live:
        yield live


def person(name: str, relay: LiveRelay) -> str:
    did = new_identity(name)
    assert run("id", "relay", name, relay.url).exit_code == 0
    assert j("card", "publish", "--as", name)[0] == 0
    return did


def contact_of(me: str, did: str) -> dict[str, Any]:
    code, doc = j("op", "--as", me, "connections")
    assert code == 0, doc
    found = [c for c in doc["connections"] if c["did"] == did]
    assert len(found) == 1, doc
    row: dict[str, Any] = found[0]
    return row


def texts(me: str) -> list[str]:
    code, drained = j("op", "--as", me, "turn-check")
    assert code == 0, drained
    return [m["text"] for m in drained["messages"]]


def test_join_by_relay_then_dm_both_ways_by_did_and_by_name(relay: LiveRelay) -> None:
    ines, jo = person("ines", relay), person("jo", relay)
    code, made = j("invite", "create", "--as", "ines")
    assert code == 0, made
    assert j("join", made["text"], "--as", "jo")[0] == 0
    assert j("op", "--as", "ines", "turn-check")[1]["joined"][0]["from"] == jo
    # both sides know how the other is reached: no URL needed, either way
    code, sent = j("op", "--as", "jo", "dm", ines, "hello ines")
    assert code == 0 and sent["state"] == "queued" and sent["route"] == "contact", sent
    code, sent = j("op", "--as", "ines", "dm", jo, "hello jo")
    assert code == 0 and sent["state"] == "queued" and sent["route"] == "contact", sent
    assert texts("ines") == ["hello ines"] and texts("jo") == ["hello jo"]
    # by the owner's name, on both sides
    assert j("op", "--as", "jo", "contact", "name", ines, "boss")[0] == 0
    assert j("op", "--as", "ines", "contact", "name", jo, "builder")[0] == 0
    code, sent = j("op", "--as", "jo", "dm", "boss", "by name")
    assert code == 0 and sent["to"] == ines and sent["toName"] == "boss", sent
    code, sent = j("op", "--as", "ines", "dm", "builder", "by name too")
    assert code == 0 and sent["to"] == jo and sent["toName"] == "builder", sent
    assert texts("ines") == ["by name"] and texts("jo") == ["by name too"]
    row = contact_of("jo", ines)
    assert row["name"] == "boss" and row["reachedBy"] == "relay"
    assert row["reach"]["relay"] == relay.url and row["reach"]["relayFrom"] == "invite"
    assert "invite" in row["sources"]
    shown = run("op", "--as", "jo", "connections").stdout
    assert f"{ines} (boss)" in shown
    inbox = run("op", "--as", "jo", "inbox").stdout
    assert f"{ines} (boss)" in inbox


def test_join_by_door_then_dm_both_ways(relay: LiveRelay) -> None:
    jo = person("jo", relay)
    with live_door("quarantine", name="ines") as door:
        made = json.loads(run("invite", "create", "--as", "ines", "--url", door.base,
                              "--json").stdout)
        code, joined = j("join", made["text"], "--as", "jo")
        assert code == 0, joined
        code, sent = j("op", "--as", "jo", "dm", door.did, "hello door")
        assert code == 0 and sent["state"] == "delivered", sent
        assert sent["route"] == "contact" and sent["receipt"]["verified"] is True
        code, sent = j("op", "--as", "ines", "dm", jo, "hello jo")
        assert code == 0 and sent["state"] == "queued" and sent["route"] == "contact", sent
    assert texts("jo") == ["hello jo"]
    assert contact_of("ines", jo)["reach"]["relayFrom"] == "invite"


def test_approve_then_dm_without_a_url(relay: LiveRelay) -> None:
    vis = person("vis", relay)
    with live_door("quarantine") as door:
        code, sent = j("op", "--as", "vis", "dm", door.did, "let me in", "--connect",
                       door.base)
        assert code == 0 and sent["state"] == "held", sent
        assert run("op", "--as", "door", "requests", "approve",
                   sent["requestId"]).exit_code == 0
        code, answer = j("op", "--as", "door", "dm", vis, "welcome", "--reply-to",
                         sent["messageId"])
        assert code == 0 and answer["state"] == "queued", answer
        assert texts("vis") == ["welcome"]
        # the visitor: the door its verified card named is remembered
        code, again = j("op", "--as", "vis", "dm", door.did, "thanks")
        assert code == 0 and again["state"] == "delivered" and again["route"] == "contact", \
            again
        # the owner: the approval made a contact; the relay its card named, once checked
        code, more = j("op", "--as", "door", "dm", vis, "anything else?")
        assert code == 0 and more["route"] == "contact", more
        row = contact_of("door", vis)
        assert {"approval", "exchange"} <= set(row["sources"]), row
        assert row["reach"]["relay"] == relay.url and row["reach"]["relayFrom"] == "card"


def test_a_dm_with_relay_then_one_without(relay: LiveRelay) -> None:
    person("alice", relay)
    bob = person("bob", relay)
    code, sent = j("op", "--as", "alice", "dm", bob, "first", "--relay", relay.url)
    assert code == 0 and sent["state"] == "queued", sent
    code, sent = j("op", "--as", "alice", "dm", bob, "second")
    assert code == 0 and sent["state"] == "queued" and sent["route"] == "contact", sent
    assert contact_of("alice", bob)["reach"]["relayFrom"] == "card"


def test_a_forged_metadata_relay_never_becomes_the_reach(relay: LiveRelay,
                                                         tmp_path: Path) -> None:
    """bob's card is at (and names) one relay; his message names another, holding a copy
    of that card: a place to look whose card does not name it. Nothing is learned."""
    alice = person("alice", relay)
    bob = person("bob", relay)
    assert j("op", "--as", "alice", "policy", "open")[0] == 0
    with live_relay(tmp_path / "other.sqlite3") as other:
        envelope = httpx.get(f"{relay.url}/card/{bob}").json()
        assert other.post("card", envelope).status_code == 200
        assert run("id", "relay", "bob", other.url).exit_code == 0  # metadata.relay: other
        code, sent = j("op", "--as", "bob", "dm", alice, "hi", "--relay", relay.url)
        assert code == 0 and sent["state"] == "queued", sent
        assert texts("alice") == ["hi"]
        row = contact_of("alice", bob)
        assert row["relayHint"] == other.url and row["reach"] is None, row
        code, refused = j("op", "--as", "alice", "dm", bob, "answer")
        assert code == 1 and refused["error"] == "relay-not-on-card", refused
        assert contact_of("alice", bob)["reach"] is None
