"""The contact book (issue 18 §1): names are the owner's and stand for one DID, never
shadow an identity or a trusted org, carry no hostile characters, are never taken from a
peer's words; every contact, however met, is in one list; a store at schema version 9
brings its invite contacts into the book. In-process CLI, SQLite on disk, no network."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.db import Schema, open_database, upgrade, version_of
from muretai_cli.home import ConnectionStore, KeyStore, TrustList, keys_dir
from muretai_cli.inbox.invites import Contact, InviteStore
from muretai_cli.inbox.store import IdentityStore, db_path, door_schema, open_identity_store
from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run


def j(*args: str) -> tuple[int, dict[str, Any]]:
    out = run(*args, "--json")
    assert out.stdout, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return out.exit_code, doc


@pytest.fixture
def me() -> str:
    return new_identity("me")


@pytest.fixture
def store(me: str) -> Iterator[IdentityStore]:
    opened = open_identity_store(me, None)
    try:
        yield opened
    finally:
        opened.close()


def peer() -> str:
    return SigningKey.generate().did


def test_a_name_stands_for_one_did(me: str) -> None:
    bob, carol = peer(), peer()
    code, doc = j("op", "--as", "me", "contact", "name", bob, "pal")
    assert code == 0 and doc["did"] == bob and doc["name"] == "pal", doc
    for taken in ("pal", "PAL"):  # names compare case-insensitively
        code, doc = j("op", "--as", "me", "contact", "name", carol, taken)
        assert code == 1 and doc["error"] == "name-taken", doc
    # the name works where a peer's DID is expected, and a DID gets one name at a time
    code, doc = j("op", "--as", "me", "senders", "allow", "pal")
    assert code == 0 and doc["did"] == bob, doc
    assert j("op", "--as", "me", "contact", "name", "pal", "buddy")[0] == 0  # a rename
    assert j("op", "--as", "me", "contact", "name", carol, "pal")[0] == 0  # free again
    code, doc = j("op", "--as", "me", "contact", "unname", "pal")
    assert code == 0 and doc["did"] == carol
    code, doc = j("op", "--as", "me", "contact", "unname", "pal")
    assert code == 1 and doc["error"] == "no-such-name"
    code, doc = j("op", "--as", "me", "senders", "allow", "pal")
    assert code == 2 and doc["error"] == "bad-did"


def test_a_name_never_shadows_an_identity_or_a_trusted_org(me: str) -> None:
    new_identity("work")
    TrustList().add(peer(), "Acme", 1)
    for name in ("work", "WORK", "me", "acme"):
        code, doc = j("op", "--as", "me", "contact", "name", peer(), name)
        assert code == 1 and doc["error"] == "name-shadows-identity", (name, doc)
    code, doc = j("op", "--as", "me", "contact", "name", me, "myself")
    assert code == 1 and doc["error"] == "to-self"


@pytest.mark.parametrize("name", ["x\x1b[2J", "a b", "did:key:z6Mk", "", ".hidden", "é",
                                  "n" * 65, "bob\nEVIL"])
def test_hostile_names_are_refused(me: str, name: str) -> None:
    code, doc = j("op", "--as", "me", "contact", "name", peer(), name)
    assert code == 2 and doc["error"] in ("bad-contact-name", "usage"), doc
    assert "\x1b" not in json.dumps(doc) and "\\u001b" not in json.dumps(doc)


def test_a_name_a_peer_gave_itself_is_never_used(me: str, store: IdentityStore) -> None:
    bob = peer()
    InviteStore(store.db).add_contact(Contact(bob, "buddy", None, None,
                                              "https://bob.example", 1, "claimed-invite"))
    code, doc = j("op", "--as", "me", "dm", "buddy", "hi")
    assert code == 2 and doc["error"] == "bad-did", doc
    code, doc = j("op", "--as", "me", "connections")
    row = next(c for c in doc["connections"] if c["did"] == bob)
    assert code == 0 and row["name"] is None and row["sources"] == ["invite"]
    code, doc = j("invite", "contacts", "--as", "me")  # their words, shown as theirs
    assert [(c["did"], c["name"], c["ownName"]) for c in doc["contacts"]] == [
        (bob, "buddy", None)]


def test_connections_is_one_list_of_every_contact(me: str, store: IdentityStore) -> None:
    invited, granted, approved, talked = peer(), peer(), peer(), peer()
    InviteStore(store.db).add_contact(Contact(invited, "theirs", None, None,
                                              "https://inv.example", 10, "joined-invite"))
    ConnectionStore(me).remember(granted, endpoint="https://door.example/a2a",
                                 base="https://door.example", now=20, grant_id="g1")
    store.set_sender(approved, "approved", 30)
    store.record_sent(peer=talked, message={"messageId": "m1", "contextId": "c1",
                                            "text": "hi", "timestamp": 40},
                      channel="door", state="delivered", now=40, address="https://t.example")
    code, doc = j("op", "--as", "me", "connections")
    assert code == 0, doc
    rows = {c["did"]: c for c in doc["connections"]}
    assert {d: rows[d]["sources"] for d in (invited, granted, approved, talked)} == {
        invited: ["invite"], granted: ["grant"], approved: ["approval"], talked: ["exchange"]}
    assert rows[invited]["reach"]["door"] == "https://inv.example"
    assert rows[invited]["reach"]["doorFrom"] == "invite"
    assert rows[granted]["reachedBy"] == "door" and rows[granted]["grantId"] == "g1"
    assert rows[approved]["reach"] is None and rows[approved]["firstSeen"] == 30
    # `invite contacts` is the same book, filtered to those an invite made
    code, doc = j("invite", "contacts", "--as", "me")
    assert [c["did"] for c in doc["contacts"]] == [invited]
    # the alias shows the same list
    assert [c["did"] for c in j("op", "--as", "me", "contact", "list")[1]["connections"]] \
        == [c["did"] for c in j("op", "--as", "me", "connections")[1]["connections"]]


def test_a_version_9_store_brings_its_invite_contacts_into_the_book(me: str) -> None:
    path: Path = db_path(me)
    path.parent.mkdir(parents=True, exist_ok=True)
    full = door_schema()
    assert "contact_book" in str(full.migrations[9])  # version 9 -> 10: the book
    db = open_database(path, namespace="")
    try:
        upgrade(db, Schema(full.store, full.migrations[:9]))
        bob = peer()
        db.execute("INSERT INTO contacts (did, name, relay, enc_pub, url, since, how) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (bob, "Bob says", "https://relay.example", "ab" * 32, None, 5,
                    "joined-invite"))
        assert upgrade(db, full) == (9, full.latest) and version_of(db, full) == full.latest
    finally:
        db.close()
    code, doc = j("op", "--as", "me", "connections")
    assert code == 0, doc
    row = next(c for c in doc["connections"] if c["did"] == bob)
    assert row["name"] is None and row["sources"] == ["invite"] and row["firstSeen"] == 5
    assert row["reach"]["relay"] == "https://relay.example"
    assert row["reach"]["encPub"] == "ab" * 32 and row["reachedBy"] == "relay"
    assert KeyStore(keys_dir()).load("me").did == me
