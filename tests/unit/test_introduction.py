"""Introductions (artifacts/introduction.py): the public AgentIntroduction wire, minted and
verified. Each refusal case breaks exactly one rule and is refused for its own reason; a
credential made by the public recipe (written out here from the reference's description,
with nothing of ours) is accepted, and ours passes the recipe's own checks."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from muretai_cli.artifacts.introduction import (
    Introduction,
    mint_introduction,
    mint_request,
    trust_bp,
    verify_introduction,
)
from muretai_cli.errors import Refused
from muretai_cli.seam import parse_document
from tests.intro_cases import CASES
from tests.intro_recipe import (
    ALICE,
    BOB,
    CAROL,
    DAY,
    MALLORY,
    NOW,
    recipe_accepts,
    recipe_credential,
    recipe_did,
    requested,
    resign,
)


def _check(vc: object, *, now: int = NOW, revoked: Any = ()) -> Introduction:
    return verify_introduction(vc, subject=CAROL.did, recipient=BOB.did, now=now,
                               revoked=revoked)


# -- the reference's output, and ours, both ways ------------------------------------------

def test_the_recipe_matches_our_dids() -> None:
    assert recipe_did(ALICE.seed) == ALICE.did


def test_a_credential_made_by_the_public_recipe_is_accepted() -> None:
    vc = requested(endpoint="https://alice.example")
    raw = json.dumps(vc).encode()  # as it would arrive: bytes, through the parse boundary
    intro = _check(parse_document(raw))
    assert (intro.issuer, intro.subject, intro.introduced_to) == (ALICE.did, CAROL.did, BOB.did)
    assert intro.trust_bp == 873 and intro.expertise == ("rust",)
    assert intro.provenance.mode == "requested" and intro.provenance.request is not None
    assert intro.provenance.request.target == BOB.did
    assert intro.issuer_endpoint == "https://alice.example"
    assert intro.to_json() == vc
    proactive = recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW, request=None)
    assert _check(proactive).provenance.mode == "proactive"


def test_a_credential_we_mint_passes_the_public_checks() -> None:
    request = mint_request(CAROL, introducer=ALICE.did, target=BOB.did, now=NOW - DAY)
    vc = mint_introduction(ALICE, subject=CAROL.did, to=BOB.did, now=NOW, request=request,
                           expertise=["rust"], trust=trust_bp("0.9"))
    assert recipe_accepts(vc, CAROL.did, BOB.did, NOW + 1)
    assert not recipe_accepts(vc, CAROL.did, MALLORY.did, NOW + 1)
    assert vc["credentialSubject"]["trustLevelBp"] == 900
    assert _check(vc, now=NOW + 1).provenance.mode == "requested"
    proactive = mint_introduction(ALICE, subject=CAROL.did, to=BOB.did, now=NOW)
    assert recipe_accepts(proactive, CAROL.did, BOB.did, NOW + 1)
    assert set(vc) == {"id", "type", "issuer", "issuanceDate", "credentialSubject",
                       "provenance", "proof"}


def test_a_checked_introduction_is_a_frozen_value() -> None:
    vc = requested()
    intro = _check(vc)
    with pytest.raises(dataclasses.FrozenInstanceError):
        intro.trust_bp = 1000  # type: ignore[misc]
    with pytest.raises(TypeError):
        intro.doc["issuer"] = MALLORY.did  # type: ignore[index]


def test_a_stored_introduction_outlives_its_request() -> None:
    # The request is judged at issuanceDate: 40 days later it is old, the vouch still fresh.
    vc = requested(valid=60 * DAY)
    assert _check(vc, now=NOW + 40 * DAY).provenance.mode == "requested"


def test_a_credential_without_provenance_is_tolerated_as_unrecorded() -> None:
    vc = requested()
    del vc["provenance"]
    assert _check(resign(vc, ALICE.seed)).provenance.mode == "unrecorded"


# -- bad input: each case breaks one rule (tests.intro_cases) -------------------------

@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bad_credential_is_refused_for_its_own_reason(case: str) -> None:
    build, code = CASES[case]
    vc = build()
    with pytest.raises(Refused) as caught:
        _check(vc)
    assert caught.value.code == code, caught.value.detail
    with pytest.raises(Refused) as general:  # a read-only mapping: the general path
        _check(MappingProxyType(vc))
    assert (general.value.code, general.value.detail) == (code, caught.value.detail)


def test_a_revoked_credential_is_refused_by_set_and_by_predicate() -> None:
    vc = requested()
    assert _check(vc, revoked={"urn:uuid:other"}).id == vc["id"]
    for revoked in ({vc["id"]}, lambda cid: cid == vc["id"]):
        with pytest.raises(Refused) as caught:
            _check(vc, revoked=revoked)
        assert caught.value.code == "revoked"


def test_the_minter_refuses_what_the_verifier_would() -> None:
    stale = mint_request(CAROL, introducer=ALICE.did, target=BOB.did, now=NOW - 31 * DAY)
    elsewhere = mint_request(CAROL, introducer=ALICE.did, target=MALLORY.did, now=NOW)
    for request, code in ((stale, "request-stale"), (elsewhere, "request-retargeted")):
        with pytest.raises(Refused) as caught:
            mint_introduction(ALICE, subject=CAROL.did, to=BOB.did, now=NOW, request=request)
        assert caught.value.code == code


@pytest.mark.parametrize(("typed", "bp"), [("0", 0), ("1", 1000), ("1.0", 1000),
                                           ("0.873", 873), ("0.5", 500)])
def test_trust_is_basis_points_exactly(typed: str, bp: int) -> None:
    assert trust_bp(typed) == bp and isinstance(trust_bp(typed), int)


@pytest.mark.parametrize("typed", ["1.5", "-0.1", "0.8735", "nan", "inf", "x", ""])
def test_trust_outside_the_range_or_finer_than_a_basis_point_is_refused(typed: str) -> None:
    with pytest.raises(Refused) as caught:
        trust_bp(typed)
    assert caught.value.code == "bad-trust"


# -- total on hostile input ---------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                max_size=4),
    max_leaves=20)
_PATHS = [(), ("credentialSubject",), ("proof",), ("provenance",),
          ("provenance", "request")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_PATHS), st.text(max_size=20), _json, st.booleans())
def test_verify_is_total_on_mutated_credentials(path: tuple[str, ...], key: str, value: Any,
                                                sign_again: bool) -> None:
    vc = requested()
    target: Any = vc
    for step in path:
        target = target[step]
    target[key] = value
    if sign_again:
        vc = resign(vc, ALICE.seed)
    with contextlib.suppress(Refused):
        _check(vc)


@settings(max_examples=200, deadline=None)
@given(_json)
def test_verify_is_total_on_any_json_value(value: Any) -> None:
    with pytest.raises(Refused):
        _check(value)


def test_a_duplicated_key_is_read_last_wins_as_the_parse_boundary_reads_it() -> None:
    # The signature covers what the parse boundary reads (the last spelling), so a duplicate
    # that changes a signed value breaks the signature, and one that repeats it is harmless.
    vc = requested()
    raw = json.dumps(vc).encode()
    field = b'"introducedTo": "' + BOB.did.encode() + b'"'
    swapped = raw.replace(field, field + b', "introducedTo": "' + MALLORY.did.encode() + b'"')
    with pytest.raises(Refused) as caught:
        _check(parse_document(swapped))
    assert caught.value.code == "bad-signature"
    shadowed = raw.replace(field, b'"introducedTo": "' + MALLORY.did.encode() + b'", ' + field)
    assert _check(parse_document(shadowed)).introduced_to == BOB.did
