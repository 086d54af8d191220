"""DID documents for did:key, computed offline (no network, no crypto backend)."""

from __future__ import annotations

from typing import Any

import base58

from muretai_cli.seam._didkey import public_from_did, x25519_from_ed25519_public
from muretai_cli.seam._smallorder import SMALL_ORDER_ENCODINGS

X25519_CODEC = b"\xec\x01"
_P = 2**255 - 19
_D = (-121665 * pow(121666, _P - 2, _P)) % _P


def _multibase(prefix: bytes, key: bytes) -> str:
    return "z" + base58.b58encode(prefix + key).decode("ascii")


def _is_curve_point(public: bytes) -> bool:
    """Whether 32 bytes decode to a point of edwards25519 (canonical y, x recoverable)."""
    y = int.from_bytes(public, "little") & ((1 << 255) - 1)
    if y >= _P:
        return False
    xx = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    if xx == 0:
        return not public[31] & 0x80
    return pow(xx, (_P - 1) // 2, _P) == 1


def describe_did(did: str) -> dict[str, Any]:
    """Expand a did:key into its DID document (Multikey methods) plus facts and warnings.

    Raises ``Refused('bad-did')`` for a DID the codec refuses. Weak keys are described and
    warned about, never refused: refusing them is the verifier's job.
    """
    curve, public = public_from_did(did)
    key_mb = did[len("did:key:"):]
    vm_id = f"{did}#{key_mb}"
    method = {"id": vm_id, "type": "Multikey", "controller": did, "publicKeyMultibase": key_mb}
    document: dict[str, Any] = {
        "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
        "id": did,
        "verificationMethod": [method],
        "authentication": [vm_id],
        "assertionMethod": [vm_id],
        "capabilityDelegation": [vm_id],
        "capabilityInvocation": [vm_id],
    }
    warnings: list[str] = []
    if curve == "ed25519":
        x_mb = _multibase(X25519_CODEC, x25519_from_ed25519_public(public))
        document["verificationMethod"].append({"id": f"{did}#{x_mb}", "type": "Multikey",
                                               "controller": did, "publicKeyMultibase": x_mb})
        document["keyAgreement"] = [f"{did}#{x_mb}"]
        if public in SMALL_ORDER_ENCODINGS:
            warnings.append("small-order-key: this key is a small-order point; it can never "
                            "verify a signature")
        elif not _is_curve_point(public):
            warnings.append("not-a-curve-point: these bytes are not a valid Ed25519 point; the "
                            "key can never verify a signature")
    else:
        warnings.append("not-ed25519: a P-256 did:key never verifies a muretai signature")
    return {"did": did, "curve": curve, "publicKeyHex": public.hex(),
            "publicKeyMultibase": key_mb, "didDocument": document, "warnings": warnings}


FINGERPRINT_LABEL = b"muretai fingerprint v1\x00"


def fingerprint(did: str) -> str:
    """A short string a person can read aloud to check a DID out of band: the first 80
    bits of SHA-256(label || the key's multicodec-prefixed bytes), base32 (RFC 4648: A-Z,
    2-7, no 0/1/8/9 to confuse), in four groups of four, e.g. ``K7QD-2MXA-PZ4N-XW3B``.
    Raises ``Refused('bad-did')`` for a DID the codec refuses."""
    import base64
    import hashlib

    public_from_did(did)  # refuses what is not a did:key
    raw = base58.b58decode(did[len("did:key:z"):])
    text = base64.b32encode(hashlib.sha256(FINGERPRINT_LABEL + raw).digest()[:10]).decode()
    return "-".join(text[i:i + 4] for i in range(0, 16, 4))


def same_fingerprint(given: str, did: str) -> bool:
    """Whether ``given`` (any case, spaces or dashes anywhere) is ``did``'s fingerprint."""
    import hmac

    tidy = "".join(ch for ch in given.upper() if ch not in " -")
    return hmac.compare_digest(tidy.encode(), fingerprint(did).replace("-", "").encode())
