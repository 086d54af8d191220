"""Checked artifacts are frozen typed values, valid on construction (as ``Invite`` is):
a grant and an org membership that passed their checks cannot be changed afterwards, and
library code narrows nothing with ``assert`` (it vanishes under ``python -O``)."""

from __future__ import annotations

import ast
import dataclasses

import pytest

from muretai_cli.artifacts.grant import Grant, check_grant, mint_grant
from muretai_cli.artifacts.org import Membership, attest_member, check_membership
from muretai_cli.errors import Refused
from muretai_cli.seam import SigningKey, open_card_envelope, sign_card_envelope
from tests.repo_files import ROOT

NOW = 1_800_000_000
DOOR = SigningKey(bytes(range(32)))
ORG = SigningKey(bytes(range(1, 33)))
LIBRARY = ROOT / "muretai_cli"


def test_a_checked_grant_is_a_frozen_value() -> None:
    doc = mint_grant(DOOR, uses=3, now=NOW, purpose="support")
    grant = check_grant(doc, for_did=DOOR.did, now=NOW)
    assert isinstance(grant, Grant)
    assert (grant.did, grant.id, grant.uses, grant.iat, grant.purpose, grant.sig) == (
        DOOR.did, doc["id"], 3, NOW, "support", doc["sig"])
    assert grant.to_json() == doc
    with pytest.raises(dataclasses.FrozenInstanceError):
        grant.uses = 99  # type: ignore[misc]
    with pytest.raises(TypeError):
        grant.doc["uses"] = 99  # type: ignore[index]
    doc["uses"] = 99  # the caller's dict is not the value's
    assert grant.doc["uses"] == 3 and grant.to_json()["uses"] == 3


def test_a_checked_membership_is_a_frozen_value() -> None:
    member = SigningKey(bytes(range(2, 34))).did
    doc = attest_member(ORG, member_did=member, org_name="Acme", now=NOW, role="support")
    checked = check_membership(doc, agent_did=member, now=NOW)
    assert isinstance(checked, Membership)
    assert (checked.org_did, checked.agent_did, checked.org_name, checked.role, checked.exp) \
        == (ORG.did, member, "Acme", "support", None)
    assert checked.to_json() == doc
    with pytest.raises(dataclasses.FrozenInstanceError):
        checked.org_name = "Other"  # type: ignore[misc]


@pytest.mark.parametrize("field", ["did", "id", "uses", "iat", "exp"])
def test_a_grant_missing_a_field_is_refused_by_name(field: str) -> None:
    doc = mint_grant(DOOR, uses=3, now=NOW)
    del doc[field]
    with pytest.raises(Refused) as info:
        check_grant(doc, for_did=DOOR.did, now=NOW)
    assert info.value.code == "malformed-grant"


def test_an_opened_card_envelope_carries_its_ts() -> None:
    signed = open_card_envelope(sign_card_envelope(DOOR, {"name": "d"}, NOW),
                                expected_did=DOOR.did)
    assert signed.ts == NOW and signed.card == {"name": "d", "did": DOOR.did}


def test_library_code_has_no_assert() -> None:
    found = [f"{path.relative_to(LIBRARY)}:{node.lineno}"
             for path in sorted(LIBRARY.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(), str(path)))
             if isinstance(node, ast.Assert)]
    assert found == [], "assert narrows nothing in library code (python -O drops it): " \
        + ", ".join(found)
