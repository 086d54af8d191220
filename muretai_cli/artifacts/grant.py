"""Contact grants: a door's signed, countable, expiring invitation to write to it.

    {"typ": "muretai/contact-grant/1", "did": <issuer>, "id": <random>, "uses": <int >= 1>,
     "exp": <int epoch>, "iat": <int epoch>, "purpose"?: str, "sig": ...}

``sig`` covers the canonical bytes of the grant without ``sig``, under the key ``did`` names.
Redeeming one is a separate signed statement by the visitor:
``sig`` over the canonical bytes of ``{grantId, from, to, timestamp}``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from muretai_cli.artifacts._signed import (
    int_field,
    sign_object,
    str_field,
    verify_object,
)
from muretai_cli.errors import Refused
from muretai_cli.seam import (
    ARTIFACT_IAT_SKEW,
    MESSAGE_WINDOW,
    SigningKey,
    canonical_bytes,
    check_fresh,
    verify_signature,
)

GRANT_TYP = "muretai/contact-grant/1"
DEFAULT_TTL = 7 * 86400
REDEEM_METHOD = "contact/redeem"


def mint_grant(key: SigningKey, *, uses: int, now: int, ttl: int = DEFAULT_TTL,
               purpose: str | None = None) -> dict[str, Any]:
    """A new grant with a 128-bit random id, signed by ``key``."""
    if isinstance(uses, bool) or not isinstance(uses, int) or uses < 1:
        raise Refused("bad-uses", "uses must be an integer of at least 1")
    if ttl < 1:
        raise Refused("bad-expiry", "a grant must expire in the future")
    # hex: 128 bits that never start with "-" (which a command line would read as an option)
    body: dict[str, Any] = {"typ": GRANT_TYP, "did": key.did, "id": secrets.token_hex(16),
                            "uses": uses, "iat": now, "exp": now + ttl}
    if purpose is not None:
        body["purpose"] = purpose
    return sign_object(key, body)


@dataclass(frozen=True, slots=True)
class Grant:
    """A contact grant whose signature verified for the door that issued it, unexpired when
    checked. Built only by ``check_grant``; ``doc`` is the signed document as received (what
    a visitor sends back, and what ``sig`` covers), read-only."""

    did: str
    id: str
    uses: int
    iat: int
    exp: int
    purpose: str | None
    sig: str
    doc: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dict(self.doc)


def check_grant(grant: object, *, for_did: str, now: int) -> Grant:
    """Verify a grant for the door ``for_did`` at ``now``; returns it, or raises ``Refused``.

    Checks, in order: shape and ``typ``; integer fields; ``did`` is the DID the caller
    expects (``grant-for-other-did``); the signature; ``iat`` not in the future; expiry.
    """
    if not isinstance(grant, dict):
        raise Refused("malformed-grant", "a grant is a JSON object")
    if grant.get("typ") != GRANT_TYP:
        raise Refused("wrong-typ", f"typ must be {GRANT_TYP!r}")
    issuer = str_field(grant, "did", code="malformed-grant")
    grant_id = str_field(grant, "id", code="malformed-grant", limit=256)
    if len(grant_id) < 16:
        raise Refused("malformed-grant", "a grant id carries at least 128 bits (16+ characters)")
    uses = int_field(grant, "uses", code="malformed-grant")
    iat = int_field(grant, "iat", code="malformed-grant")
    exp = int_field(grant, "exp", code="malformed-grant")
    if uses < 1:
        raise Refused("malformed-grant", "uses must be at least 1")
    purpose = grant.get("purpose")
    if "purpose" in grant and not isinstance(purpose, str):
        raise Refused("malformed-grant", "purpose must be a string")
    if not isinstance(for_did, str) or not for_did:
        raise Refused("grant-for-other-did", "the verifier was given no DID to expect")
    if issuer != for_did:
        raise Refused("grant-for-other-did", f"the grant is issued by {issuer}, not {for_did}")
    verify_object(grant, issuer)
    if iat > now + ARTIFACT_IAT_SKEW:
        raise Refused("issued-in-future", f"iat is {iat - now} s in the future")
    if exp <= now:
        raise Refused("expired", f"the grant expired {now - exp} s ago")
    return Grant(issuer, grant_id, uses, iat, exp, purpose if isinstance(purpose, str) else None,
                 grant["sig"], MappingProxyType(dict(grant)))


def redeem_payload(grant_id: str, from_did: str, to_did: str, timestamp: int) -> bytes:
    return canonical_bytes({"from": from_did, "grantId": grant_id, "timestamp": timestamp,
                            "to": to_did})


def redeem_params(key: SigningKey, grant: Mapping[str, Any], *, now: int) -> dict[str, Any]:
    """``contact/redeem`` params: the grant, plus the visitor's signed statement."""
    to_did = str(grant["did"])
    sig = key.sign(redeem_payload(str(grant["id"]), key.did, to_did, now))
    return {"grant": dict(grant), "from": key.did, "timestamp": now, "sig": sig}


def check_redeemer(params: object, *, door_did: str, now: int,
                   window: int = MESSAGE_WINDOW) -> tuple[dict[str, Any], str]:
    """The redeemer's half of ``contact/redeem`` at the door: the params' shape, a grant
    for this door (checked before the signature: it says more), freshness, then the
    redeemer's signature. Returns ``(grant document, redeemer DID)``; the grant itself is
    not judged yet (``check_grant``), so a door can rate-limit and consult its lists first.
    """
    if not isinstance(params, dict):
        raise Refused("malformed-redeem", "params must be an object")
    grant = params.get("grant")
    if not isinstance(grant, dict) or not isinstance(grant.get("id"), str):
        raise Refused("malformed-grant", "params.grant must be a grant object")
    from_did = str_field(params, "from", code="malformed-redeem")
    timestamp = int_field(params, "timestamp", code="malformed-redeem")
    if grant.get("did") != door_did:
        raise Refused("grant-for-other-did", "the grant was issued by another DID")
    check_fresh(timestamp, now, window)
    verify_signature(from_did, redeem_payload(grant["id"], from_did, door_did, timestamp),
                     params.get("sig"))
    return grant, from_did


def check_redeem(params: object, *, door_did: str, now: int, window: int = MESSAGE_WINDOW,
                 admit: Callable[[str], None] | None = None) -> tuple[Grant, str]:
    """Verify ``contact/redeem`` params at the door; returns ``(grant, redeemer DID)``:
    ``check_redeemer`` (shape, freshness, signature), then ``admit(redeemer)`` when given
    (a door's rate and lists: it raises to refuse), then the grant itself (``check_grant``).
    """
    grant, from_did = check_redeemer(params, door_did=door_did, now=now, window=window)
    if admit is not None:
        admit(from_did)
    return check_grant(grant, for_did=door_did, now=now), from_did

