"""The JSON Schemas of our trust wire (intro-proposal, intro-response, intro-revocations):
what our minters write passes, with the jsonschema package as another CI would use it, and
each mutated one fails."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from muretai_cli.artifacts.introduction import mint_introduction
from muretai_cli.artifacts.vouch import Reach, mint_proposal, mint_response, mint_revocations
from muretai_cli.schemas import load
from tests.intro_recipe import ALICE, BOB, CAROL, NOW


def made() -> dict[str, dict[str, Any]]:
    vc = mint_introduction(ALICE, subject=CAROL.did, to=BOB.did, now=NOW)
    return {"intro-proposal": mint_proposal(ALICE, vc, to=BOB.did, now=NOW, note="hi",
                                            reach=Reach(relay="https://r.example",
                                                        enc_pub=ALICE.enc_pub)),
            "intro-response": mint_response(BOB, to=ALICE.did, proposal_id="a" * 32,
                                            credential_id=vc["id"], decision="declined",
                                            now=NOW),
            "intro-revocations": mint_revocations(ALICE, ["urn:a", "urn:b"], now=NOW)}


@pytest.mark.parametrize("name", ["intro-proposal", "intro-response", "intro-revocations"])
def test_what_we_mint_passes_its_schema(name: str) -> None:
    errors = list(Draft202012Validator(load(name)).iter_errors(made()[name]))
    assert not errors, [e.message for e in errors]


MUTATIONS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("intro-proposal", lambda d: d.update(typ="muretai/intro-proposal/2")),
    ("intro-proposal", lambda d: d.update(iat=1.5)),
    ("intro-proposal", lambda d: d.update(note="x" * 1001)),
    ("intro-proposal", lambda d: d.pop("credential")),
    ("intro-response", lambda d: d.update(decision="maybe")),
    ("intro-response", lambda d: d.pop("proposalId")),
    ("intro-revocations", lambda d: d.update(revoked=["urn:a", "urn:a"])),
    ("intro-revocations", lambda d: d.update(sig="short")),
]


@pytest.mark.parametrize(("name", "change"), MUTATIONS)
def test_a_mutated_one_fails(name: str, change: Callable[[dict[str, Any]], None]) -> None:
    doc = copy.deepcopy(made()[name])
    change(doc)
    assert not Draft202012Validator(load(name)).is_valid(doc)
