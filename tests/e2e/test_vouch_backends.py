"""The proposal tables on both backends (SQLite file, PostgreSQL schema): a proposal held,
the flood bound counted, a decision read back, a response recorded, revocations kept."""

from __future__ import annotations

from muretai_cli.artifacts.introduction import mint_introduction
from muretai_cli.artifacts.vouch import mint_proposal, mint_response
from muretai_cli.db import is_postgres_url
from muretai_cli.errors import Refused
from muretai_cli.inbox.proposals import (
    ProposalBook,
    VouchBook,
    receive_proposal,
    receive_response,
    responses_for,
)
from muretai_cli.seam import SigningKey
from muretai_cli.seam._limits import PROPOSALS_PER_INTRODUCER
from tests.store_helpers import door_store

ALICE = SigningKey(bytes(range(32)))
BOB = SigningKey(bytes(range(2, 34)))
CAROL = SigningKey(bytes(range(1, 33)))
NOW = 1_800_000_000


def test_the_tables_on_each_backend(backend: str) -> None:
    bob = door_store(BOB.did, backend)
    # a SQLite file is one identity's; a PostgreSQL database holds a schema per identity
    alice = door_store(ALICE.did, backend if is_postgres_url(backend)
                       else backend + "-alice.sqlite3")
    try:
        sent = []
        for _ in range(PROPOSALS_PER_INTRODUCER):
            doc = mint_proposal(ALICE, mint_introduction(ALICE, subject=CAROL.did, to=BOB.did,
                                                         now=NOW), to=BOB.did, now=NOW)
            ProposalBook(alice.db).record_sent(doc["id"], doc["credential"]["id"], BOB.did,
                                               NOW)
            sent.append((doc, receive_proposal(doc, me=BOB.did, store=bob, now=NOW)))
        extra = mint_proposal(ALICE, mint_introduction(ALICE, subject=CAROL.did, to=BOB.did,
                                                       now=NOW), to=BOB.did, now=NOW)
        try:
            receive_proposal(extra, me=BOB.did, store=bob, now=NOW)
            raise AssertionError("the bound did not hold")
        except Refused as exc:
            assert exc.code == "proposals-full"
        doc, held = sent[0]
        row = ProposalBook(bob.db).decide(held.row.id, "approved", NOW)
        assert VouchBook(bob, BOB.did).proposal(doc["credential"]["id"]) == "approved"
        answer = mint_response(BOB, to=ALICE.did, proposal_id=row.wire_id,
                               credential_id=row.credential_id, decision="approved", now=NOW)
        receive_response(answer, me=ALICE.did, store=alice, now=NOW)
        assert responses_for(alice) == {row.credential_id: "approved"}
        assert ProposalBook(alice.db).revoke(row.credential_id, NOW)
        assert VouchBook(alice, ALICE.did).revoked(ALICE.did, row.credential_id, None)
    finally:
        bob.close()
        alice.close()


def test_an_introduced_first_contact_and_a_verified_digest_on_each_backend(
        backend: str) -> None:
    from muretai_cli.artifacts.introduction import signed_digest, verify_introduction
    from muretai_cli.inbox.arrival import Arrival

    bob = door_store(BOB.did, backend)
    try:
        vc = mint_introduction(ALICE, subject=CAROL.did, to=BOB.did, now=NOW)
        receive_proposal(mint_proposal(ALICE, vc, to=BOB.did, now=NOW), me=BOB.did,
                         store=bob, now=NOW)
        assert VouchBook(bob, BOB.did).review(vc["id"]) == ("pending", signed_digest(vc))
        intro = verify_introduction(vc, subject=CAROL.did, recipient=BOB.did, now=NOW + 5)
        first = Arrival(None, CAROL.did, "m-1", "hello bob", NOW, BOB.did, "sig",
                        introduced=intro)
        assert bob.accept(first, NOW + 5)  # the door's path: one transaction, both
        assert bob.introduced_by(CAROL.did) == ALICE.did
        assert bob.sender_status(CAROL.did) == "approved"
        bob.set_sender(CAROL.did, "allowed", NOW + 6)
        again = Arrival(None, CAROL.did, "m-2", "again", NOW, BOB.did, "sig", introduced=intro)
        assert bob.accept(again, NOW + 7)
        assert bob.sender_status(CAROL.did) == "allowed"  # never lowered
    finally:
        bob.close()
