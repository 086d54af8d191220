"""Proposals and answers carried sealed by a relay and read by the drain
(inbox/relayed.receive), on a real SQLite store: held for review like at the door, and a
deposit whose signer is not the depositor refused, nothing kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.artifacts.introduction import mint_introduction
from muretai_cli.artifacts.vouch import mint_proposal
from muretai_cli.inbox.proposals import ProposalBook
from muretai_cli.inbox.relayed import receive
from muretai_cli.inbox.store import IdentityStore
from muretai_cli.seam import SigningKey, canonical_bytes, seal_box
from tests.intro_recipe import ALICE, BOB, CAROL, MALLORY, NOW


@pytest.fixture
def store(tmp_path: Path) -> Iterator[IdentityStore]:
    opened = IdentityStore(tmp_path / "bob.db")
    yield opened
    opened.close()


def deposit(store: IdentityStore, depositor: SigningKey, params: dict[str, Any],
            deposit_id: str = "d1") -> Any:
    request = {"jsonrpc": "2.0", "id": 1, "method": "introduce/propose", "params": params}
    blob = seal_box(depositor, BOB.enc_pub, canonical_bytes(request), ad=b"")
    return receive(store, BOB, "quarantine", deposit_id=deposit_id, sender=depositor.did,
                   from_enc=depositor.enc_pub, blob=blob, now=NOW)


def proposal() -> dict[str, Any]:
    return mint_proposal(ALICE, mint_introduction(ALICE, subject=CAROL.did, to=BOB.did,
                                                  now=NOW), to=BOB.did, now=NOW)


def test_a_relayed_proposal_is_held_for_review(store: IdentityStore) -> None:
    got = deposit(store, ALICE, proposal())
    assert (got.outcome, got.reason) == ("vouch", "proposed")
    [row] = ProposalBook(store.db).rows()
    assert row.channel == "relay" and row.id == got.detail
    [item] = store.unshown()
    assert item["outcome"] == "vouch" and item["reason"]["code"] == "proposed"


def test_a_proposal_deposited_by_another_is_refused(store: IdentityStore) -> None:
    got = deposit(store, MALLORY, proposal())  # Alice's signed proposal, Mallory's deposit
    assert (got.outcome, got.reason) == ("refused", "signer-not-depositor")
    assert ProposalBook(store.db).rows() == []


def test_a_relayed_forged_proposal_is_refused_for_its_reason(store: IdentityStore) -> None:
    got = deposit(store, ALICE, {**proposal(), "note": "added"})
    assert (got.outcome, got.reason) == ("refused", "bad-signature")
    assert ProposalBook(store.db).rows() == []
