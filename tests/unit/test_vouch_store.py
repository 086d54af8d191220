"""Proposals held for review, answers recorded, revocations (inbox/proposals.py), on a real
SQLite identity store: the flood bound, the review states the gate reads, and that a
response is recorded only for a proposal this identity sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.artifacts.introduction import mint_introduction
from muretai_cli.artifacts.vouch import mint_proposal, mint_response
from muretai_cli.errors import InputError, Refused
from muretai_cli.inbox.proposals import (
    ProposalBook,
    VouchBook,
    receive_proposal,
    receive_response,
    responses_for,
)
from muretai_cli.inbox.store import IdentityStore
from muretai_cli.seam import SigningKey
from muretai_cli.seam._limits import PROPOSALS_PER_INTRODUCER, PROPOSALS_TOTAL
from tests.intro_recipe import ALICE, BOB, CAROL, MALLORY, NOW


@pytest.fixture
def store(tmp_path: Path) -> Iterator[IdentityStore]:
    opened = IdentityStore(tmp_path / "bob.db")
    yield opened
    opened.close()


def proposed(issuer: SigningKey = ALICE, subject: str = CAROL.did, **kw: Any) -> dict[str, Any]:
    vc = mint_introduction(issuer, subject=subject, to=BOB.did, now=NOW)
    return mint_proposal(issuer, vc, to=BOB.did, now=NOW, **kw)


def take(store: IdentityStore, doc: dict[str, Any]) -> Any:
    return receive_proposal(doc, me=BOB.did, store=store, now=NOW)


def test_a_proposal_is_held_once_and_its_state_read_by_credential(store: IdentityStore) -> None:
    doc = proposed(note="x")
    held = take(store, doc)
    again = take(store, doc)
    assert held.new and not again.new and again.row.id == held.row.id
    assert held.to_json()["state"] == "held" and held.to_json()["proposalId"] == doc["id"]
    book = VouchBook(store, BOB.did)
    assert book.proposal(doc["credential"]["id"]) == "pending"
    assert book.proposal("urn:uuid:unknown") is None


@pytest.mark.parametrize("decision", ["approved", "declined"])
def test_a_decision_is_what_proposal_answers(store: IdentityStore, decision: Any) -> None:
    doc = proposed()
    held = take(store, doc)
    ProposalBook(store.db).decide(held.row.id, decision, NOW + 5)
    assert VouchBook(store, BOB.did).proposal(doc["credential"]["id"]) == decision
    with pytest.raises(InputError, match="already-decided"):
        ProposalBook(store.db).decide(held.row.id, "approved", NOW + 6)


def test_proposals_are_bounded_per_introducer(store: IdentityStore) -> None:
    for _ in range(PROPOSALS_PER_INTRODUCER):
        take(store, proposed())
    with pytest.raises(Refused, match="proposals-full"):
        take(store, proposed())
    assert len(ProposalBook(store.db).rows()) == PROPOSALS_PER_INTRODUCER  # nothing kept
    take(store, proposed(MALLORY))  # another introducer is not crowded out


def test_proposals_are_bounded_in_all(store: IdentityStore, monkeypatch: Any) -> None:
    import muretai_cli.inbox.proposals as proposals

    monkeypatch.setattr(proposals, "PROPOSALS_TOTAL", 2)
    take(store, proposed(ALICE))
    take(store, proposed(MALLORY))
    with pytest.raises(Refused, match="proposals-full"):
        take(store, proposed(SigningKey(bytes(range(9, 41)))))
    assert PROPOSALS_TOTAL > PROPOSALS_PER_INTRODUCER


def test_a_decided_proposal_frees_its_place(store: IdentityStore) -> None:
    rows = [take(store, proposed()) for _ in range(PROPOSALS_PER_INTRODUCER)]
    ProposalBook(store.db).decide(rows[0].row.id, "declined", NOW)
    take(store, proposed())


def test_a_credential_id_belongs_to_one_introducer(store: IdentityStore) -> None:
    from muretai_cli.artifacts.introduction import PROOF_TYPE, iso_utc, signing_payload

    first = proposed()
    take(store, first)
    vc = mint_introduction(MALLORY, subject=CAROL.did, to=BOB.did, now=NOW)
    body = {k: v for k, v in vc.items() if k != "proof"}
    body["id"] = first["credential"]["id"]  # Mallory reuses Alice's credential id
    body["proof"] = {"type": PROOF_TYPE, "created": iso_utc(NOW),
                     "verificationMethod": MALLORY.did, "jws": MALLORY.sign(signing_payload(body))}
    with pytest.raises(Refused, match="credential-id-taken"):
        take(store, mint_proposal(MALLORY, body, to=BOB.did, now=NOW))


def test_a_blocked_introducer_is_refused(store: IdentityStore) -> None:
    store.set_sender(ALICE.did, "blocked", NOW)
    with pytest.raises(Refused, match="blocked"):
        take(store, proposed())
    assert ProposalBook(store.db).rows() == []


def test_a_response_is_recorded_only_for_a_proposal_sent(tmp_path: Path) -> None:
    alice = IdentityStore(tmp_path / "alice.db")
    try:
        doc = proposed()
        cid = doc["credential"]["id"]
        answer = mint_response(BOB, to=ALICE.did, proposal_id=doc["id"], credential_id=cid,
                               decision="approved", now=NOW)
        with pytest.raises(Refused, match="unknown-proposal"):
            receive_response(answer, me=ALICE.did, store=alice, now=NOW)
        ProposalBook(alice.db).record_sent(doc["id"], cid, BOB.did, NOW)
        forged = mint_response(MALLORY, to=ALICE.did, proposal_id=doc["id"],
                               credential_id=cid, decision="declined", now=NOW)
        with pytest.raises(Refused, match="unknown-proposal"):  # not the proposal's target
            receive_response(forged, me=ALICE.did, store=alice, now=NOW)
        assert responses_for(alice) == {}
        assert receive_response(answer, me=ALICE.did, store=alice, now=NOW)["changed"]
        assert responses_for(alice) == {cid: "approved"}
    finally:
        alice.close()


def test_revocations_are_the_issuers_own_table(store: IdentityStore) -> None:
    book = ProposalBook(store.db)
    assert book.revoke("urn:b", NOW) and book.revoke("urn:a", NOW)
    assert not book.revoke("urn:a", NOW + 1)
    assert book.revoked_ids() == ["urn:a", "urn:b"]
    vouches = VouchBook(store, BOB.did)
    assert vouches.revoked(BOB.did, "urn:a", None)
    assert not vouches.revoked(BOB.did, "urn:c", None)
    assert not vouches.revoked(ALICE.did, "urn:a", None)  # another issuer's: no checker


def _first_contact(message_id: str, intro: Any = None) -> Any:
    from muretai_cli.inbox.arrival import Arrival

    return Arrival(None, CAROL.did, message_id, "hello bob", NOW, BOB.did, "sig",
                   introduced=intro)


def test_the_introduced_record_commits_with_the_first_contact_or_not_at_all(
        store: IdentityStore) -> None:
    from muretai_cli.artifacts.introduction import verify_introduction

    intro = verify_introduction(mint_introduction(ALICE, subject=CAROL.did, to=BOB.did,
                                                  now=NOW), subject=CAROL.did,
                                recipient=BOB.did, now=NOW + 5)
    assert store.accept(_first_contact("m-plain"), NOW)  # already in the inbox, no vouch
    store.db.execute("DELETE FROM replay")  # its replay row aged out; the inbox row stays
    # the same message again, now admitted on an introduction: a replay, so nothing of
    # the introduction is written either
    assert not store.accept(_first_contact("m-plain", intro), NOW + 5)
    assert store.introduced_by(CAROL.did) is None and store.sender_status(CAROL.did) is None
    assert store.accept(_first_contact("m-new", intro), NOW + 6)  # one transaction, both
    assert store.introduced_by(CAROL.did) == ALICE.did
    assert store.sender_status(CAROL.did) == "approved"


def test_an_arrival_carries_only_an_introduction_of_its_own_sender() -> None:
    from muretai_cli.artifacts.introduction import verify_introduction

    of_mallory = verify_introduction(mint_introduction(ALICE, subject=MALLORY.did,
                                                       to=BOB.did, now=NOW),
                                     subject=MALLORY.did, recipient=BOB.did, now=NOW + 5)
    with pytest.raises(TypeError, match="introduced"):
        _first_contact("m-1", of_mallory)
    with pytest.raises(TypeError, match="introduced"):
        _first_contact("m-2", {"issuer": ALICE.did})


@pytest.mark.parametrize("status", ["allowed", "approved"])
def test_an_introduction_never_lowers_a_sender_already_let_in(store: IdentityStore,
                                                               status: Any) -> None:
    from muretai_cli.artifacts.introduction import verify_introduction

    intro = verify_introduction(mint_introduction(ALICE, subject=CAROL.did, to=BOB.did,
                                                  now=NOW), subject=CAROL.did,
                                recipient=BOB.did, now=NOW + 5)
    store.set_sender(CAROL.did, status, NOW)
    decided = store.db.all("SELECT count(*) FROM decisions")[0][0]
    assert store.accept(_first_contact("m-1", intro), NOW + 6)
    assert store.sender_status(CAROL.did) == status
    assert store.db.all("SELECT count(*) FROM decisions")[0][0] == decided  # none added
    assert store.introduced_by(CAROL.did) == ALICE.did
