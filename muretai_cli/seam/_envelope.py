"""The six signed fields of a message (seam §3).

The verifier takes the recipient from its caller, by name, and never from the message.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from typing import Any

from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam._canonical import canonical_bytes, is_number_hazard
from muretai_cli.seam._didkey import verifying_key_from_did
from muretai_cli.seam._ed25519 import SigningKey, verify_strict
from muretai_cli.seam._limits import MAX_ID_LEN, MAX_SAFE_INT, MESSAGE_WINDOW

SIGNED_FIELDS = ("contextId", "from", "messageId", "text", "timestamp", "to")


def six_fields(env: Mapping[str, Any]) -> dict[str, Any]:
    """The six fields, present and of the right types, or ``Refused`` naming the field.

    ``timestamp`` is kept as the wire carried it -- an integer, a float or a string -- and
    never coerced: the signature is over those bytes (seam §1, timestampNote). Whether it
    names a moment is the freshness check's question (``timestamp_seconds``), not this one.
    """
    if not isinstance(env, Mapping):  # wire input: a JSON array or string must not crash
        raise Refused("malformed-envelope", "a message envelope is a JSON object")
    missing = [k for k in SIGNED_FIELDS if env.get(k) is None and k != "contextId"]
    if missing:
        raise Refused("missing-field", f"the signed fields lack {', '.join(missing)}")
    fields = {k: env.get(k) for k in SIGNED_FIELDS}
    for key in ("from", "to", "messageId", "text"):
        if not isinstance(fields[key], str):
            raise Refused("malformed-field", f"{key} must be a string")
    if not fields["messageId"] or len(fields["messageId"]) > MAX_ID_LEN:
        raise Refused("malformed-field", f"messageId must be 1..{MAX_ID_LEN} characters")
    context = fields["contextId"]
    if context is not None and not isinstance(context, str):
        raise Refused("malformed-field", "contextId must be a string or null")
    stamp = fields["timestamp"]
    if isinstance(stamp, bool) or not isinstance(stamp, int | float | str):
        raise Refused("malformed-field", "timestamp must be an integer epoch second")
    if isinstance(stamp, int) and not -MAX_SAFE_INT <= stamp <= MAX_SAFE_INT:
        raise Refused("int-out-of-range", "timestamp is outside ±(2**53-1)")
    return fields


def timestamp_seconds(stamp: object) -> int:
    """The epoch second a received ``timestamp`` names: an integer as it is, a float rounded
    down; anything else (a string) names no moment: ``timestamp-not-a-number``."""
    if isinstance(stamp, int) and not isinstance(stamp, bool):
        return stamp
    if isinstance(stamp, float) and abs(stamp) <= MAX_SAFE_INT:
        return math.floor(stamp)
    raise Refused("timestamp-not-a-number", "timestamp is not a number of epoch seconds")


def signing_payload(env: Mapping[str, Any]) -> bytes:
    """Canonical bytes of exactly the six fields (``contextId`` null when absent)."""
    return canonical_bytes(six_fields(env))


def sign_envelope(key: SigningKey, *, to: str, text: str, timestamp: int,
                  message_id: str | None = None, context_id: str | None = None,
                  from_did: str | None = None) -> dict[str, Any]:
    """The six fields plus ``sig``, signed by ``key`` (whose DID becomes ``from``, unless
    ``from_did`` names the root an op key signs for: its KeyState must travel beside).

    A signer emits integers only: a float or string ``timestamp`` is refused, never signed."""
    if isinstance(timestamp, float):
        raise Refused("float-in-payload", f"timestamp is a float ({timestamp!r}); a signer "
                                          "writes an integer epoch second")
    if not isinstance(timestamp, int) or isinstance(timestamp, bool):
        raise Refused("malformed-field", "timestamp must be an integer epoch second")
    fields = {
        "contextId": context_id,
        "from": key.did if from_did is None else from_did,
        "messageId": message_id or f"m-{secrets.token_hex(12)}",
        "text": text,
        "timestamp": timestamp,
        "to": to,
    }
    payload = signing_payload(fields)
    return {**fields, "sig": key.sign(payload)}


def verify_envelope(env: Mapping[str, Any], *, to_did: str,
                    signer: str | None = None) -> dict[str, Any]:
    """Verify a message's six fields and ``sig``; returns the six fields, or raises ``Refused``.

    ``to_did`` is who the caller is. There is no fallback: an empty one is refused before
    anything else, so a message can never name its own recipient. ``signer``: the op key
    a KeyState the caller verified delegates for ``from`` (``keystate.message_signer``).
    """
    if not isinstance(to_did, str) or not to_did:
        raise Refused("wrong-recipient", "the verifier was given no recipient of its own")
    fields = six_fields(env)
    sig = env.get("sig")
    if sig is None:
        raise Refused("missing-sig", "the message carries no signature")
    if fields["to"] != to_did:
        raise Refused("wrong-recipient", f"addressed to {fields['to']}, not to {to_did}")
    check_signed_fields(fields, sig, signer=signer)
    return fields


def check_signed_fields(fields: Mapping[str, Any], sig: object, *,
                        signer: str | None = None) -> None:
    """``sig`` over the canonical bytes of ``fields`` as received, under the key ``from``
    names (or ``signer``: the op key a verified KeyState for ``from`` delegates to);
    ``Refused`` otherwise. When those bytes hold a number hazard (a float whose
    canonical spelling differs between languages) and the signature does not verify over
    Python's spelling, the answer is ``cannot-verify``: the signer's bytes cannot be
    reproduced here, which is not proof that the signature is bad."""
    public, raw = verifying_key_from_did(fields["from"] if signer is None else signer)
    try:
        verify_strict(public, raw, canonical_bytes(fields), sig)
    except MuretaiError as exc:
        if exc.code == "bad-signature" and is_number_hazard(fields.get("timestamp")):
            raise Refused("cannot-verify", f"timestamp {fields['timestamp']!r} is a float "
                                           "whose canonical bytes differ between languages; "
                                           "the signer's bytes cannot be reproduced, so "
                                           "this signature can be neither accepted nor "
                                           "called bad") from None
        raise


def check_fresh(timestamp: object, now: int, window: int = MESSAGE_WINDOW) -> None:
    """Refuse a timestamp more than ``window`` seconds from ``now``, in either direction
    (or one that names no moment: ``timestamp-not-a-number``)."""
    skew = timestamp_seconds(timestamp) - now
    if skew > window:
        raise Refused("from-the-future", f"timestamp is {skew} s ahead (window ±{window} s)")
    if -skew > window:
        raise Refused("stale", f"timestamp is {-skew} s old (window ±{window} s)")
