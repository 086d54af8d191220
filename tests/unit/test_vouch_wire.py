"""Our trust wire (artifacts/vouch.py): proposals, responses, revocation lists. Each refusal
case breaks exactly one rule and is refused for its own reason."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from muretai_cli.artifacts._signed import sign_object
from muretai_cli.artifacts.introduction import mint_introduction
from muretai_cli.artifacts.vouch import (
    Reach,
    mint_proposal,
    mint_response,
    mint_revocations,
    verify_proposal,
    verify_response,
    verify_revocations,
)
from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam._limits import MAX_PROPOSAL_NOTE, PROPOSAL_MAX_AGE
from tests.intro_recipe import ALICE, BOB, CAROL, DAY, MALLORY, NOW


def credential(issuer: Any = ALICE, to: str = BOB.did, **kw: Any) -> dict[str, Any]:
    return mint_introduction(issuer, subject=CAROL.did, to=to, now=NOW, **kw)


def proposal(**kw: Any) -> dict[str, Any]:
    return mint_proposal(ALICE, kw.pop("cred", None) or credential(), to=kw.pop("to", BOB.did),
                         now=kw.pop("now", NOW), **kw)


def resigned(doc: dict[str, Any], key: Any = ALICE, **changes: Any) -> dict[str, Any]:
    body = {k: v for k, v in doc.items() if k != "sig"}
    body.update(changes)
    return sign_object(key, body)


def test_a_proposal_verifies_for_its_target() -> None:
    doc = proposal(note="she knows rust", reach=Reach(url="https://alice.example/"))
    got = verify_proposal(doc, me=BOB.did, now=NOW + 60)
    assert (got.issuer, got.target, got.subject) == (ALICE.did, BOB.did, CAROL.did)
    assert got.credential_id == doc["credential"]["id"] and got.note == "she knows rust"
    assert got.reach.url == "https://alice.example/"


REFUSALS: dict[str, tuple[Callable[[], object], str]] = {
    "not-an-object": (lambda: [1], "malformed"),
    "wrong-typ": (lambda: resigned(proposal(), typ="muretai/contact-grant/1"), "wrong-typ"),
    "forged-signature": (lambda: {**proposal(), "sig": proposal()["sig"]}, "bad-signature"),
    "signed-by-another": (lambda: resigned(proposal(), MALLORY), "bad-signature"),
    "note-altered": (lambda: {**proposal(note="a"), "note": "b"}, "bad-signature"),
    "for-another-target": (lambda: proposal(to=MALLORY.did, cred=credential(to=MALLORY.did)),
                           "proposal-not-for-me"),
    "credential-for-another": (lambda: proposal(cred=credential(to=MALLORY.did)),
                               "credential-wrong-recipient"),
    "issued-by-another": (lambda: proposal(cred=credential(MALLORY)), "issuer-not-proposer"),
    "credential-tampered": (lambda: resigned(proposal(), credential={
        **credential(), "issuer": MALLORY.did}), "credential-bad-signature"),
    "credential-expired": (lambda: proposal(cred=mint_introduction(
        ALICE, subject=CAROL.did, to=BOB.did, now=NOW - 120, valid_for=60)),
        "credential-expired"),
    "from-the-future": (lambda: proposal(now=NOW + 3600), "issued-in-future"),
    "stale": (lambda: proposal(now=NOW - PROPOSAL_MAX_AGE - DAY), "stale"),
    "float-iat": (lambda: {**proposal(), "iat": float(NOW)}, "float-in-payload"),
    "note-too-long": (lambda: resigned(proposal(), note="x" * (MAX_PROPOSAL_NOTE + 1)),
                      "malformed"),
    "bad-id": (lambda: resigned(proposal(), id="../etc"), "malformed"),
    "bad-enc-pub": (lambda: resigned(proposal(), reach={"enc_pub": "zz"}), "malformed"),
    "no-credential": (lambda: resigned(proposal(), credential="x"), "malformed"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_broken_proposal_is_refused_for_its_own_reason(case: str) -> None:
    build, reason = REFUSALS[case]
    with pytest.raises(Refused) as caught:
        verify_proposal(build(), me=BOB.did, now=NOW)
    assert caught.value.code == reason


def test_the_expected_target_comes_from_the_caller() -> None:
    doc = proposal()
    with pytest.raises(Refused, match="proposal-not-for-me"):
        verify_proposal(doc, me="", now=NOW)
    with pytest.raises(Refused, match="proposal-not-for-me"):
        verify_proposal(doc, me=MALLORY.did, now=NOW)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["typ", "id", "from", "to", "iat", "sig",
                                                       "credential", "note", "reach",
                                                       "revoked", "issuer", "decision"]),
                                      inner, max_size=6), max_leaves=12))
def test_the_verifiers_are_total(doc: object) -> None:
    for check in (lambda: verify_proposal(doc, me=BOB.did, now=NOW),
                  lambda: verify_response(doc, me=ALICE.did, now=NOW),
                  lambda: verify_revocations(doc, issuer=ALICE.did, now=NOW)):
        with contextlib.suppress(MuretaiError):
            check()


# -- responses --------------------------------------------------------------------------

def response(**kw: Any) -> dict[str, Any]:
    return mint_response(BOB, to=kw.pop("to", ALICE.did), proposal_id="a" * 32,
                         credential_id="urn:uuid:x", decision=kw.pop("decision", "approved"),
                         now=NOW)


def test_a_response_verifies_for_its_introducer() -> None:
    got = verify_response(response(decision="declined"), me=ALICE.did, now=NOW)
    assert (got.target, got.decision, got.proposal_id) == (BOB.did, "declined", "a" * 32)


@pytest.mark.parametrize(("build", "reason"), [
    (lambda: {**response(), "decision": "declined"}, "bad-signature"),
    (lambda: response(to=MALLORY.did), "response-not-for-me"),
    (lambda: resigned(response(), BOB, decision="maybe"), "malformed"),
    (lambda: resigned(response(), BOB, iat=NOW + 3600), "issued-in-future"),
], ids=["altered-decision", "for-another", "unknown-decision", "future"])
def test_each_broken_response_is_refused(build: Callable[[], object], reason: str) -> None:
    with pytest.raises(Refused) as caught:
        verify_response(build(), me=ALICE.did, now=NOW)
    assert caught.value.code == reason


# -- revocation lists -------------------------------------------------------------------

def test_a_revocation_list_is_sorted_unique_and_verifies() -> None:
    doc = mint_revocations(ALICE, ["urn:b", "urn:a", "urn:b"], now=NOW)
    assert doc["revoked"] == ["urn:a", "urn:b"]
    assert verify_revocations(doc, issuer=ALICE.did, now=NOW).revoked == {"urn:a", "urn:b"}


@pytest.mark.parametrize(("build", "reason"), [
    (lambda: {**mint_revocations(ALICE, ["urn:a"], now=NOW), "revoked": []}, "bad-signature"),
    (lambda: mint_revocations(MALLORY, ["urn:a"], now=NOW), "list-of-another-issuer"),
    (lambda: resigned(mint_revocations(ALICE, [], now=NOW), issuer=MALLORY.did),
     "list-of-another-issuer"),
    (lambda: resigned(mint_revocations(ALICE, [], now=NOW), revoked=["urn:b", "urn:a"]),
     "malformed"),
    (lambda: resigned(mint_revocations(ALICE, [], now=NOW), revoked=["urn:a", "urn:a"]),
     "malformed"),
    (lambda: resigned(mint_revocations(ALICE, [], now=NOW), typ="x"), "wrong-typ"),
    (lambda: resigned(mint_revocations(ALICE, [], now=NOW), iat=NOW + 3600),
     "issued-in-future"),
], ids=["tampered", "another-issuer", "names-another", "unsorted", "duplicate", "typ",
        "future"])
def test_each_broken_revocation_list_is_refused(build: Callable[[], object],
                                                reason: str) -> None:
    with pytest.raises(Refused) as caught:
        verify_revocations(build(), issuer=ALICE.did, now=NOW)
    assert caught.value.code == reason
