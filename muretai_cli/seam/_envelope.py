"""The six signed fields of a message (seam §3).

The verifier takes the recipient from its caller, by name, and never from the message.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from muretai_cli.errors import Refused
from muretai_cli.seam._canonical import canonical_bytes
from muretai_cli.seam._didkey import verifying_key_from_did
from muretai_cli.seam._ed25519 import SigningKey, verify_strict
from muretai_cli.seam._limits import MAX_ID_LEN, MAX_SAFE_INT, MESSAGE_WINDOW

SIGNED_FIELDS = ("contextId", "from", "messageId", "text", "timestamp", "to")


def six_fields(env: Mapping[str, Any]) -> dict[str, Any]:
    """The six fields, present and of the right types, or ``Refused`` naming the field.

    ``timestamp`` must be an integer: a float is ``float-in-payload`` (never coerced).
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
    if isinstance(stamp, float):
        raise Refused("float-in-payload", f"timestamp is a float ({stamp!r}); it must be an "
                                          "integer epoch second")
    if not isinstance(stamp, int) or isinstance(stamp, bool):
        raise Refused("malformed-field", "timestamp must be an integer epoch second")
    if not -MAX_SAFE_INT <= stamp <= MAX_SAFE_INT:
        raise Refused("int-out-of-range", "timestamp is outside ±(2**53-1)")
    return fields


def signing_payload(env: Mapping[str, Any]) -> bytes:
    """Canonical bytes of exactly the six fields (``contextId`` null when absent)."""
    return canonical_bytes(six_fields(env))


def sign_envelope(key: SigningKey, *, to: str, text: str, timestamp: int,
                  message_id: str | None = None, context_id: str | None = None) -> dict[str, Any]:
    """The six fields plus ``sig``, signed by ``key`` (whose DID becomes ``from``)."""
    fields = {
        "contextId": context_id,
        "from": key.did,
        "messageId": message_id or f"m-{secrets.token_hex(12)}",
        "text": text,
        "timestamp": timestamp,
        "to": to,
    }
    payload = signing_payload(fields)
    return {**fields, "sig": key.sign(payload)}


def verify_envelope(env: Mapping[str, Any], *, to_did: str) -> dict[str, Any]:
    """Verify a message's six fields and ``sig``; returns the six fields, or raises ``Refused``.

    ``to_did`` is who the caller is. There is no fallback: an empty one is refused before
    anything else, so a message can never name its own recipient.
    """
    if not isinstance(to_did, str) or not to_did:
        raise Refused("wrong-recipient", "the verifier was given no recipient of its own")
    fields = six_fields(env)
    sig = env.get("sig")
    if sig is None:
        raise Refused("missing-sig", "the message carries no signature")
    if fields["to"] != to_did:
        raise Refused("wrong-recipient", f"addressed to {fields['to']}, not to {to_did}")
    public, raw = verifying_key_from_did(fields["from"])
    verify_strict(public, raw, canonical_bytes(fields), sig)
    return fields


def check_fresh(timestamp: int, now: int, window: int = MESSAGE_WINDOW) -> None:
    """Refuse a timestamp more than ``window`` seconds from ``now``, in either direction."""
    skew = timestamp - now
    if skew > window:
        raise Refused("from-the-future", f"timestamp is {skew} s ahead (window ±{window} s)")
    if -skew > window:
        raise Refused("stale", f"timestamp is {-skew} s old (window ±{window} s)")
