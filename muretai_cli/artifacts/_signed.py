"""Our artifacts' one signing rule: ``sig`` over the canonical bytes of the object without it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muretai_cli.errors import Refused
from muretai_cli.seam import SigningKey, canonical_bytes, check_signable, verify_signature


def object_payload(obj: Mapping[str, Any]) -> bytes:
    """Canonical bytes of ``obj`` minus ``sig``. Floats anywhere are ``float-in-payload``."""
    body = {k: v for k, v in obj.items() if k != "sig"}
    check_signable(body)
    return canonical_bytes(body)


def sign_object(key: SigningKey, body: Mapping[str, Any]) -> dict[str, Any]:
    if "sig" in body:
        raise ValueError("the body to sign already carries a sig")
    return {**body, "sig": key.sign(object_payload(body))}


def verify_object(obj: Mapping[str, Any], signer_did: str) -> None:
    """Verify ``obj['sig']`` under ``signer_did``, or raise ``Refused`` naming why."""
    if "sig" not in obj or obj["sig"] is None:
        raise Refused("missing-sig", "the artifact carries no signature")
    verify_signature(signer_did, object_payload(obj), obj["sig"])


def require_int(obj: Mapping[str, Any], field: str, *, code: str = "malformed",
                optional: bool = False) -> int | None:
    """An integer field (never a bool or float), or ``Refused``."""
    value = obj.get(field)
    if value is None and optional and field not in obj:
        return None
    if isinstance(value, float):
        raise Refused("float-in-payload", f"{field} is a float ({value!r}); integers only")
    if not isinstance(value, int) or isinstance(value, bool):
        raise Refused(code, f"{field} must be an integer")
    return value


def require_str(obj: Mapping[str, Any], field: str, *, code: str = "malformed",
                optional: bool = False, limit: int = 1024) -> str | None:
    value = obj.get(field)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value or len(value) > limit:
        raise Refused(code, f"{field} must be a non-empty string of at most {limit} characters")
    return value


def int_field(obj: Mapping[str, Any], field: str, *, code: str = "malformed") -> int:
    """A required integer field: ``require_int`` with the absent case refused, not asserted."""
    value = require_int(obj, field, code=code)
    if value is None:  # pragma: no cover - require_int refuses None when not optional
        raise Refused(code, f"{field} must be an integer")
    return value


def str_field(obj: Mapping[str, Any], field: str, *, code: str = "malformed",
              limit: int = 1024) -> str:
    """A required non-empty string field: ``require_str`` with the absent case refused."""
    value = require_str(obj, field, code=code, limit=limit)
    if value is None:  # pragma: no cover - require_str refuses None when not optional
        raise Refused(code, f"{field} must be a non-empty string")
    return value


def verify_under_key_hex(key_hex: str, payload: bytes, sig: object) -> None:
    """Verify ``sig`` under a raw Ed25519 key given as 64 lowercase hex (a KeyState's
    ``rootKey``), through the same strict door as a DID: the key is spelt as its did:key."""
    from muretai_cli.seam import did_from_public

    if len(key_hex) != 64 or any(c not in "0123456789abcdef" for c in key_hex):
        raise Refused("malformed-key", "a key is 64 lowercase hex characters (Ed25519)")
    verify_signature(did_from_public(bytes.fromhex(key_hex)), payload, sig)
