"""A credential verified once (a proposal held here) and carried again byte for byte is not
solved twice (``verify_introduction``'s ``verified``, ``signed_digest``): the Ed25519
equations are skipped only for the very bytes and signatures that verified, and every other
check is still made."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from muretai_cli.artifacts.introduction import signed_digest, verify_introduction
from muretai_cli.errors import Refused
from tests.intro_cases import CASES, signatures_checked
from tests.intro_recipe import ALICE, BOB, CAROL, DAY, NOW, recipe_credential, requested

# the cases whose refusal is a signature's: with a digest of another (good) credential
# they must still fail the equation; the others must fail their own check even when the
# equations are skipped (their digest handed back as if verified before)
SIGNATURES = {"tampered", "signed-by-another-issuer", "jws-not-strict-base64",
              "forged-request"}


def _check(vc: Any, verified: str | None, *, now: int = NOW) -> Any:
    return verify_introduction(vc, subject=CAROL.did, recipient=BOB.did, now=now,
                               verified=verified)


@pytest.mark.parametrize("kind", ["requested", "proactive"])
def test_the_same_bytes_again_solve_no_equation(kind: str) -> None:
    vc = requested() if kind == "requested" else recipe_credential(
        ALICE.seed, CAROL.did, BOB.did, issued=NOW - 60, request=None)
    with signatures_checked() as solved:
        first = _check(vc, None)
        assert len(solved) == (2 if kind == "requested" else 1)
        solved.clear()
        again = _check(copy.deepcopy(vc), signed_digest(vc))
    assert solved == [] and again.id == first.id and again.provenance == first.provenance


@pytest.mark.parametrize("case", sorted(SIGNATURES))
def test_a_changed_credential_is_solved_in_full(case: str) -> None:
    good = requested()
    build, code = CASES[case]
    with pytest.raises(Refused) as caught:
        _check(build(), signed_digest(good))
    assert caught.value.code == code
    # under the id of the one verified: the bytes decide, not the id (the issuer's
    # signature no longer covers them)
    bad = build()
    bad["id"] = good["id"]
    with pytest.raises(Refused) as caught:
        _check(bad, signed_digest(good))
    assert caught.value.code == "bad-signature"


@pytest.mark.parametrize("case", sorted(set(CASES) - SIGNATURES))
def test_every_other_check_is_made_without_the_equations(case: str) -> None:
    build, code = CASES[case]
    bad = build()
    with pytest.raises(Refused) as caught:
        _check(bad, signed_digest(bad))
    assert caught.value.code == code


def test_expiry_and_revocation_are_judged_now() -> None:
    vc = requested()
    digest = signed_digest(vc)
    with pytest.raises(Refused, match="expired"):
        _check(vc, digest, now=NOW + 31 * DAY)
    with pytest.raises(Refused) as caught:
        verify_introduction(vc, subject=CAROL.did, recipient=BOB.did, now=NOW,
                            revoked={vc["id"]}, verified=digest)
    assert caught.value.code == "revoked"


def test_a_different_signature_over_the_same_body_is_another_digest() -> None:
    vc = requested()
    other = copy.deepcopy(vc)
    other["proof"]["jws"] = other["proof"]["jws"][:-4] + "AAA="
    assert signed_digest(other) != signed_digest(vc)
    moved = copy.deepcopy(vc)
    moved["provenance"]["request"]["sig"] = vc["proof"]["jws"]  # a request's sig is signed
    assert signed_digest(moved) != signed_digest(vc)


def test_a_request_signed_under_a_keystate_is_solved_again() -> None:
    # its delegation is judged at ``now``: the digest skips the issuer's equation only
    from muretai_cli.artifacts.introduction import mint_introduction, request_text
    from muretai_cli.artifacts.keystate import mint_keystate
    from muretai_cli.seam import SigningKey, sign_envelope

    op = SigningKey(bytes(range(7, 39)))
    record = sign_envelope(op, to=ALICE.did, text=request_text(BOB.did), timestamp=NOW - DAY,
                           from_did=CAROL.did)
    record["keystate"] = mint_keystate(CAROL, op_did=op.did, epoch=1, now=NOW - 2 * DAY)
    vc = mint_introduction(ALICE, subject=CAROL.did, to=BOB.did, now=NOW - 60, request=record)
    with signatures_checked() as solved:
        assert _check(vc, None).provenance.mode == "requested"
        assert len(solved) == 2  # the issuer's, and the request's under the op key CAROL's
        solved.clear()  # KeyState delegates to (under CAROL's own key it would not verify)
        assert _check(vc, signed_digest(vc)).provenance.mode == "requested"
    # the request's again
    assert len(solved) == 1 and solved[0][1].startswith(b'{"contextId"')
