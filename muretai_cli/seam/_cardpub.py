"""The signed Agent Card envelope (seam §4): ``{v: 1, typ: "agentcard", card, ts, sig}``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam._canonical import canonical_bytes, check_signable
from muretai_cli.seam._didkey import verifying_key_from_did
from muretai_cli.seam._ed25519 import SigningKey, verify_strict
from muretai_cli.seam._limits import ENVELOPE_MAX_AGE, ENVELOPE_MAX_AHEAD

Freshness = Literal["fresh", "stale", "from-the-future"]

CARD_TYP = "agentcard"


def card_envelope_payload(card: Mapping[str, Any], ts: int) -> bytes:
    """Canonical bytes of ``{card, ts, typ, v}``: what ``sig`` covers."""
    return canonical_bytes({"card": card, "ts": ts, "typ": CARD_TYP, "v": 1})


def sign_card_envelope(key: SigningKey, card: Mapping[str, Any], ts: int) -> dict[str, Any]:
    """Sign a card as ``key``. The card must name ``key``'s DID (or none; it is filled in)."""
    body = dict(card)
    named = body.setdefault("did", key.did)
    if named != key.did:
        raise Refused("did-mismatch", f"the card names {named}, but the signer is {key.did}")
    check_signable(body, "$.card")
    check_signable(ts, "$.ts")
    return {"v": 1, "typ": CARD_TYP, "card": body, "ts": ts,
            "sig": key.sign(card_envelope_payload(body, ts))}


@dataclass(frozen=True, slots=True)
class SignedCard:
    """A card envelope that verified under the DID the caller expected: the card and the
    ``ts`` it was signed at (an integer). Built only by ``open_card_envelope``."""

    card: dict[str, Any]
    ts: int


def verify_card_envelope(env: object, *, expected_did: str) -> dict[str, Any]:
    """Verify an envelope under ``card.did`` and the caller's ``expected_did``; returns the
    card (``open_card_envelope`` for the card with its ``ts``)."""
    return open_card_envelope(env, expected_did=expected_did).card


def open_card_envelope(env: object, *, expected_did: str) -> SignedCard:
    """Verify an envelope under ``card.did`` and the caller's ``expected_did``.

    ``ts`` must be an integer (freshness is the caller's check). A float anywhere in the
    signed bytes is ``float-in-payload``: such bytes are not reproducible across languages.
    """
    if not isinstance(env, dict):
        raise Refused("malformed-envelope", "a card envelope is a JSON object")
    if env.get("v") != 1 or isinstance(env.get("v"), bool | float):
        raise Refused("malformed-envelope", f"v must be 1, not {env.get('v')!r}")
    if env.get("typ") != CARD_TYP:
        raise Refused("malformed-envelope", f"typ must be {CARD_TYP!r}")
    card = env.get("card")
    if not isinstance(card, dict) or not isinstance(card.get("did"), str):
        raise Refused("malformed-envelope", "card must be an object naming a did")
    if not isinstance(expected_did, str) or not expected_did:
        raise Refused("did-mismatch", "the verifier was given no DID to expect")
    if card["did"] != expected_did:
        raise Refused("did-mismatch", f"the card names {card['did']}, not {expected_did}")
    ts = env.get("ts")
    if isinstance(ts, float):
        raise Refused("float-in-payload", f"ts is a float ({ts!r}); it must be an integer")
    if not isinstance(ts, int) or isinstance(ts, bool):
        raise Refused("malformed-envelope", "ts must be an integer epoch second")
    check_signable(card, "$.card")
    if "sig" not in env:
        raise Refused("missing-sig", "the envelope carries no signature")
    public, raw = verifying_key_from_did(card["did"])
    verify_strict(public, raw, card_envelope_payload(card, ts), env["sig"])
    return SignedCard(card, ts)


def verify_served_card(env: object, served: Mapping[str, Any], *, expected_did: str
                       ) -> SignedCard:
    """The one rule "the card served is the card signed": ``env`` verifies under
    ``expected_did`` (``open_card_envelope``) and signs exactly ``served`` (the plain card
    fetched beside it), by canonical bytes; else ``Refused('envelope-card-differs')``. Card
    fetch and site check both ask this."""
    signed = open_card_envelope(env, expected_did=expected_did)
    if signed.card is served:  # an envelope given as the card itself (--card F)
        return signed
    try:
        same = canonical_bytes(signed.card) == canonical_bytes(dict(served))
    except MuretaiError:  # a served card no signer could have signed
        same = False
    if not same:
        raise Refused("envelope-card-differs", "the signed envelope verifies, but signs a "
                                               "different card than the one served")
    return signed


def envelope_freshness(ts: int, now: int) -> Freshness:
    """The one judge of a card envelope's age, whose verdict every caller renders: dated more
    than ENVELOPE_MAX_AHEAD ahead is ``from-the-future`` (refused: the signer's clock is
    wrong, or the date is forged), older than ENVELOPE_MAX_AGE is ``stale`` (a warning: the
    signature holds, the card may be out of date), else ``fresh``."""
    if ts - now > ENVELOPE_MAX_AHEAD:
        return "from-the-future"
    if now - ts > ENVELOPE_MAX_AGE:
        return "stale"
    return "fresh"
