"""The trust gate (inbox/consent.py): one table of first contacts carrying introductions,
each breaking one rule, judged by the door (its whole ASGI app, in-process) and by the relay
drain (``relayed.receive`` on a sealed deposit) -- the same verdict both ways, one gate."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from muretai_cli.artifacts.introduction import mint_introduction, mint_request
from muretai_cli.artifacts.message import build_message, build_message_send
from muretai_cli.inbox.relayed import receive
from muretai_cli.inbox.store import IdentityStore
from muretai_cli.inbox.vouches import NO_VOUCH_BOOK, VouchBook
from muretai_cli.seam import SigningKey, canonical_bytes, seal_box, sign_envelope
from tests.door_helpers import Live, local_door

NOW = int(time.time())


class Book:
    """A VouchBook of the test's: credential ids revoked, proposals and their state."""

    def __init__(self, revoked: set[str] | None = None,
                 proposals: dict[str, Literal["pending", "approved", "declined"]] | None = None
                 ) -> None:
        self.revoked_ids = revoked or set()
        self.proposals = proposals or {}

    def revoked(self, issuer: str, credential_id: str, endpoint: str | None) -> bool:
        return credential_id in self.revoked_ids

    def proposal(self, credential_id: str) -> Literal["pending", "approved", "declined"] | None:
        return self.proposals.get(credential_id)

    def review(self, credential_id: str
               ) -> tuple[Literal["pending", "approved", "declined"] | None, str | None]:
        return self.proposal(credential_id), None  # nothing verified before: in full


@dataclass
class World:
    me: SigningKey
    alice: SigningKey  # my contact (an allowed sender)
    stranger: SigningKey  # vouches, but is nobody of mine
    carol: SigningKey  # the newcomer


def vouch(issuer: SigningKey, subject: SigningKey, to: str, *, now: int = NOW,
          valid: int = 86400, proactive: bool = False) -> dict[str, Any]:
    request = None if proactive else mint_request(subject, introducer=issuer.did, target=to,
                                                  now=now)
    return mint_introduction(issuer, subject=subject.did, to=to, now=now, request=request,
                             valid_for=valid, expertise=["ledgers"], trust=800)


def message(sender: SigningKey, to: str, vc: dict[str, Any] | None, text: str = "hi bob"
            ) -> dict[str, Any]:
    env = sign_envelope(sender, to=to, text=text, timestamp=int(time.time()))
    msg = build_message(env)
    if vc is not None:
        msg["metadata"]["vc"] = vc
    return build_message_send(msg, 1)


Case = tuple[str, str, Callable[[World], tuple[SigningKey, dict[str, Any] | None]],
             Callable[[World], VouchBook], tuple[str, str | None]]


def _book(world: World) -> VouchBook:
    return NO_VOUCH_BOOK


CASES: list[Case] = [
    ("bare-stranger-introduced", "introduced", lambda w: (w.carol, None), _book,
     ("refused", "introduction-required")),
    ("bare-stranger-quarantine", "quarantine", lambda w: (w.carol, None), _book,
     ("held", None)),
    ("bare-stranger-closed", "closed", lambda w: (w.carol, None), _book,
     ("refused", "introduction-required")),
    ("vouched-by-contact", "introduced", lambda w: (w.carol, vouch(w.alice, w.carol, w.me.did)),
     _book, ("accepted", None)),
    ("vouched-by-contact-quarantine", "quarantine",
     lambda w: (w.carol, vouch(w.alice, w.carol, w.me.did, proactive=True)), _book,
     ("accepted", None)),
    ("vouched-by-stranger", "introduced",
     lambda w: (w.carol, vouch(w.stranger, w.carol, w.me.did)), _book, ("held", None)),
    ("vouched-by-stranger-closed", "closed",
     lambda w: (w.carol, vouch(w.stranger, w.carol, w.me.did)), _book,
     ("refused", "issuer-not-trusted")),
    ("replayed-to-me", "introduced",  # alice vouched carol to someone else
     lambda w: (w.carol, vouch(w.alice, w.carol, SigningKey.generate().did)), _book,
     ("refused", "introduction-wrong-recipient")),
    ("subject-not-sender", "introduced",  # carol presents the vouch alice gave the stranger
     lambda w: (w.carol, vouch(w.alice, w.stranger, w.me.did)), _book,
     ("refused", "introduction-wrong-subject")),
    ("expired", "introduced",
     lambda w: (w.carol, vouch(w.alice, w.carol, w.me.did, now=NOW - 100, valid=50)), _book,
     ("refused", "introduction-expired")),
    ("forged", "open",
     lambda w: (w.carol, {**vouch(w.alice, w.carol, w.me.did), "issuer": w.stranger.did}),
     _book, ("refused", "introduction-bad-signature")),
    ("blocked-issuer", "introduced",
     lambda w: (w.carol, vouch(w.stranger, w.carol, w.me.did)), _book,
     ("refused", "issuer-blocked")),
    ("blocked-sender-with-vouch", "introduced",
     lambda w: (w.stranger, vouch(w.alice, w.stranger, w.me.did)), _book,
     ("refused", "blocked")),
    ("revoked", "introduced", lambda w: (w.carol, vouch(w.alice, w.carol, w.me.did)),
     lambda w: Book(revoked={"*"}), ("refused", "introduction-revoked")),
    # A stranger's vouch proposed for review is held on the review; a contact's vouch opens
    # the door though its proposal waits (`op introduce` always proposes).
    ("proposal-pending", "introduced",
     lambda w: (w.carol, vouch(w.stranger, w.carol, w.me.did)),
     lambda w: Book(proposals={"*": "pending"}), ("held", None)),
    ("proposal-pending-closed", "closed",
     lambda w: (w.carol, vouch(w.stranger, w.carol, w.me.did)),
     lambda w: Book(proposals={"*": "pending"}), ("refused", "proposal-pending")),
    ("proposal-pending-from-contact", "introduced",
     lambda w: (w.carol, vouch(w.alice, w.carol, w.me.did)),
     lambda w: Book(proposals={"*": "pending"}), ("accepted", None)),
    ("proposal-declined", "introduced",
     lambda w: (w.carol, vouch(w.alice, w.carol, w.me.did)),
     lambda w: Book(proposals={"*": "declined"}), ("refused", "introduction-declined")),
]


class AnyId(Book):
    """``*`` stands for the credential of the case (its id is minted fresh)."""

    def revoked(self, issuer: str, credential_id: str, endpoint: str | None) -> bool:
        return "*" in self.revoked_ids

    def proposal(self, credential_id: str) -> Literal["pending", "approved", "declined"] | None:
        return self.proposals.get("*")


def _wildcard(book: VouchBook) -> VouchBook:
    return AnyId(book.revoked_ids, book.proposals) if isinstance(book, Book) else book


def _setup(store: IdentityStore, world: World, name: str) -> None:
    store.set_sender(world.alice.did, "allowed", NOW)
    if name in ("blocked-issuer", "blocked-sender-with-vouch"):
        store.set_sender(world.stranger.did, "blocked", NOW)


def _by_door(door: Live, world: World, name: str, policy: str, body: dict[str, Any],
             book: VouchBook) -> tuple[str, str | None]:
    door.door.vouches = book
    _setup(door.door.store, world, name)
    doc = door.rpc(body)
    if "result" in doc:
        return "accepted", None
    err = doc["error"]
    if err["code"] == -32014 and isinstance(err.get("data"), dict) \
            and err["data"].get("requestId"):
        return "held", None
    return "refused", err["data"]["reason"]


def _by_drain(store: IdentityStore, world: World, name: str, policy: str,
              body: dict[str, Any], sender: SigningKey, book: VouchBook
              ) -> tuple[str, str | None]:
    _setup(store, world, name)
    blob = seal_box(sender, world.me.enc_pub, canonical_bytes(body), ad=b"")
    got = receive(store, world.me, policy,  # type: ignore[arg-type]
                  deposit_id=f"d-{name}", sender=sender.did, from_enc=sender.enc_pub,
                  blob=blob, now=int(time.time()), book=book)
    return got.outcome, got.reason


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_door_and_the_drain_give_the_same_verdict(case: Case, tmp_path: Any) -> None:
    name, policy, make, make_book, expected = case
    with local_door(policy, name="bob") as door:
        world = World(door.key, SigningKey.generate(), SigningKey.generate(),
                      SigningKey.generate())
        sender, vc = make(world)
        book = _wildcard(make_book(world))
        body = message(sender, world.me.did, vc)
        assert _by_door(door, world, name, policy, body, book) == expected
        drain_store = IdentityStore(tmp_path / "drain.sqlite3")
        try:
            assert _by_drain(drain_store, world, name, policy, body, sender, book) == expected
            if expected[0] == "refused":  # nothing of a refused first contact is stored
                assert drain_store.received(sender.did, body["params"]["message"]
                                            ["messageId"]) is None
        finally:
            drain_store.close()


def test_the_introduced_refusal_names_the_remedy() -> None:
    with local_door("introduced", name="bob") as door:
        doc = door.rpc(message(SigningKey.generate(), door.did, None))
        err = doc["error"]
        assert err["code"] == -32010
        assert "intro ask" in err["data"]["remedy"] and door.did in err["data"]["remedy"]


def test_an_introduced_sender_becomes_a_contact_introduced_by_its_issuer() -> None:
    with local_door("introduced", name="bob") as door:
        alice, carol = SigningKey.generate(), SigningKey.generate()
        door.door.store.set_sender(alice.did, "allowed", NOW)
        assert "result" in door.rpc(message(carol, door.did, vouch(alice, carol, door.did)))
        store = door.door.store
        assert store.introduced_by(carol.did) == alice.did
        assert store.sender_status(carol.did) == "approved"
        # the conversation is open: a later message needs no credential
        assert "result" in door.rpc(message(carol, door.did, None, "again"))


def test_a_stranger_vouch_is_held_with_the_vouch_for_the_owner() -> None:
    with local_door("introduced", name="bob") as door:
        stranger, carol = SigningKey.generate(), SigningKey.generate()
        doc = door.rpc(message(carol, door.did, vouch(stranger, carol, door.did)))
        assert doc["error"]["code"] == -32014
        [held] = door.door.store.request_list()
        assert held["from"] == carol.did
        assert held["vouch"]["verdict"] == "not-a-contact"
        assert held["vouch"]["issuer"] == stranger.did
        assert held["vouch"]["trustLevelBp"] == 800 and held["vouch"]["expertise"] == ["ledgers"]
        assert held["vouch"]["provenance"] == "requested"


def test_a_gift_for_me_is_kept_and_one_for_another_is_not() -> None:
    with local_door("open", name="carol") as door:
        alice, bob = SigningKey.generate(), SigningKey.generate()
        mine = vouch(alice, door.key, bob.did)
        body = message(alice, door.did, None, "here is your introduction")
        meta = body["params"]["message"]["metadata"]
        meta.update({"held_vc": mine, "held_vc_url": "https://bob.example/"})
        assert "result" in door.rpc(body)
        other = message(alice, door.did, None, "not yours")
        other["params"]["message"]["metadata"]["held_vc"] = vouch(alice, SigningKey.generate(),
                                                                  bob.did)
        assert "result" in door.rpc(other)
        held = door.door.store.held_intros()
        assert [(h["id"], h["target"], h["url"]) for h in held] == \
            [(mine["id"], bob.did, "https://bob.example/")]


def test_an_oversized_credential_is_refused_before_anything() -> None:
    with local_door("open", name="bob") as door:
        carol = SigningKey.generate()
        big = {"type": ["AgentIntroduction"], "pad": "x" * 40000}
        doc = door.rpc(message(carol, door.did, big))
        assert (doc["error"]["code"], doc["error"]["data"]["reason"]) == (-32011, "vc-too-large")
        assert json.dumps(doc).count("xxxx") == 0


def test_approving_the_proposal_admits_the_first_contact_held_on_it() -> None:
    from muretai_cli.inbox.proposals import on_proposal_approved

    with local_door("introduced", name="bob") as door:
        alice, carol, other = (SigningKey.generate() for _ in range(3))
        vc = vouch(alice, carol, door.did)
        door.door.vouches = Book(proposals={vc["id"]: "pending"})
        assert door.rpc(message(carol, door.did, vc))["error"]["code"] == -32014
        stranger_vc = vouch(SigningKey.generate(), other, door.did)
        assert door.rpc(message(other, door.did, stranger_vc))["error"]["code"] == -32014
        store = door.door.store
        on_proposal_approved(store, vc["id"])
        assert [m["from"] for m in store.inbox(None)] == [carol.did]
        assert store.sender_status(carol.did) == "approved"
        assert [r["from"] for r in store.request_list()] == [other.did]  # still held
