"""Bad introductions, each breaking one rule, and the reason each must be refused with:
the verifier's tests (with and without a digest verified before) share them; and
``signatures_checked``, the Ed25519 verifications a verifier makes, counted."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from tests.intro_recipe import (
    ALICE,
    BOB,
    CAROL,
    DAY,
    MALLORY,
    NOW,
    recipe_credential,
    recipe_request,
    requested,
    resign,
)

__all__ = ["CASES", "signatures_checked"]


@contextmanager
def signatures_checked(*, messages: bool = True) -> Iterator[list[tuple[bytes, bytes]]]:
    """Every Ed25519 verification made inside, in order, as (the public key's raw bytes, the
    payload): the credential verifier's (either path), and with ``messages`` also the six
    signed fields' (``seam._envelope``: an embedded request's general path, a message's)."""
    import muretai_cli.artifacts.introduction as intro
    import muretai_cli.seam._envelope as envelope
    from muretai_cli.seam._ed25519 import verify_strict as real

    seen: list[tuple[bytes, bytes]] = []

    def counting(public: Any, raw: bytes, payload: bytes, sig: object) -> None:
        seen.append((raw, payload))
        real(public, raw, payload, sig)

    with mock.patch.object(intro, "verify_strict", counting):
        if messages:
            with mock.patch.object(envelope, "verify_strict", counting):
                yield seen
        else:
            yield seen


def _other_recipient() -> dict[str, Any]:
    request = recipe_request(CAROL.seed, ALICE.did, MALLORY.did, NOW - DAY)
    return recipe_credential(ALICE.seed, CAROL.did, MALLORY.did, issued=NOW, request=request)


def _other_subject() -> dict[str, Any]:
    request = recipe_request(MALLORY.seed, ALICE.did, BOB.did, NOW - DAY)
    return recipe_credential(ALICE.seed, MALLORY.did, BOB.did, issued=NOW, request=request)


def _expired() -> dict[str, Any]:
    request = recipe_request(CAROL.seed, ALICE.did, BOB.did, NOW - 20 * DAY)
    return recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW - 10 * DAY,
                             request=request, valid=10 * DAY)


def _forged_request() -> dict[str, Any]:
    request = recipe_request(CAROL.seed, ALICE.did, BOB.did, NOW - DAY)
    request["sig"] = recipe_request(MALLORY.seed, ALICE.did, BOB.did, NOW - DAY)["sig"]
    return recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW, request=request)


def _request_by_someone_else() -> dict[str, Any]:
    request = recipe_request(MALLORY.seed, ALICE.did, BOB.did, NOW - DAY)
    return recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW, request=request)


def _stale_request() -> dict[str, Any]:
    request = recipe_request(CAROL.seed, ALICE.did, BOB.did, NOW - 31 * DAY)
    return recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW, request=request)


def _request_after_issuance() -> dict[str, Any]:
    request = recipe_request(CAROL.seed, ALICE.did, BOB.did, NOW + 3600)
    return recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW, request=request)


def _request_to_another_introducer() -> dict[str, Any]:
    request = recipe_request(CAROL.seed, MALLORY.did, BOB.did, NOW - DAY)
    return recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW, request=request)


def _request_naming_another_target() -> dict[str, Any]:
    request = recipe_request(CAROL.seed, ALICE.did, MALLORY.did, NOW - DAY)
    return recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW, request=request)


def _proactive_smuggling_a_request() -> dict[str, Any]:
    vc = requested()
    vc["provenance"]["mode"] = "proactive"
    return resign(vc, ALICE.seed)


def _unknown_mode() -> dict[str, Any]:
    return recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW, request=None,
                             mode="gifted")


def _float_trust() -> dict[str, Any]:
    return recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW, request=None,
                             trust=0.873)


def _tampered() -> dict[str, Any]:
    vc = requested()
    vc["credentialSubject"]["trustLevelBp"] = 1000
    return vc


def _signed_by_another_issuer() -> dict[str, Any]:
    vc = requested()
    vc["proof"]["jws"] = resign(vc, MALLORY.seed)["proof"]["jws"]
    return vc


def _jws_not_strict_base64() -> dict[str, Any]:
    vc = requested()
    vc["proof"]["jws"] = vc["proof"]["jws"].rstrip("=")  # a lenient decoder still reads it
    base64.b64decode(vc["proof"]["jws"] + "==")
    return vc


CASES: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "other-recipient": (_other_recipient, "wrong-recipient"),
    "other-subject": (_other_subject, "wrong-subject"),
    "expired": (_expired, "expired"),
    "forged-request": (_forged_request, "bad-provenance"),
    "request-by-someone-else": (_request_by_someone_else, "bad-provenance"),
    "stale-request": (_stale_request, "request-stale"),
    "request-after-issuance": (_request_after_issuance, "request-stale"),
    "request-to-another-introducer": (_request_to_another_introducer, "request-retargeted"),
    "request-naming-another-target": (_request_naming_another_target, "request-retargeted"),
    "proactive-smuggling-a-request": (_proactive_smuggling_a_request, "bad-provenance"),
    "unknown-mode": (_unknown_mode, "unknown-mode"),
    "float-trust": (_float_trust, "float-in-payload"),
    "tampered": (_tampered, "bad-signature"),
    "signed-by-another-issuer": (_signed_by_another_issuer, "bad-signature"),
    "jws-not-strict-base64": (_jws_not_strict_base64, "bad-signature"),
}
