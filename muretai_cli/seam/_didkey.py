"""did:key (seam §2): the codec, and the one door from a DID to a verifying key.

The codec spells anything a did:key can say (the all-zero key included). Refusing weak
keys is ``verifying_key_from_did``'s job, because that is where a DID is about to answer a
signature question.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

import base58

from muretai_cli.errors import Refused
from muretai_cli.seam._smallorder import SMALL_ORDER_ENCODINGS

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

DID_KEY_PREFIX = "did:key:z"
MAX_B58_LEN = 512
ED25519_CODEC = b"\xed\x01"
P256_CODEC = b"\x80\x24"
Curve = Literal["ed25519", "p256"]
# The decoder we use strips trailing whitespace; refusing it here keeps one spelling per key.
_B58BTC = re.compile(r"[1-9A-HJ-NP-Za-km-z]+")
_LENGTHS: dict[bytes, tuple[Curve, int]] = {
    ED25519_CODEC: ("ed25519", 34),
    P256_CODEC: ("p256", 35),
}


def did_from_public(public: bytes, curve: Curve = "ed25519") -> str:
    """``did:key:z`` + base58btc(multicodec prefix + key bytes)."""
    if curve == "ed25519":
        if len(public) != 32:
            raise ValueError("an Ed25519 public key is 32 bytes")
        prefix = ED25519_CODEC
    else:
        if len(public) != 33 or public[0] not in (2, 3):
            raise ValueError("a P-256 did:key carries a 33-byte compressed point")
        prefix = P256_CODEC
    return DID_KEY_PREFIX + base58.b58encode(prefix + public).decode("ascii")


def public_from_did(did: object) -> tuple[Curve, bytes]:
    """Decode a did:key to ``(curve, key bytes)``, or refuse with ``bad-did``.

    Refuses: not a ``did:key:z`` string, base58 over 512 characters (CPU protection, not a
    verdict), characters outside base58btc, a multicodec prefix other than Ed25519/P-256,
    and any decoded length but the prefix's own (34 for Ed25519, 35 for P-256).
    """
    if not isinstance(did, str):
        raise Refused("bad-did", f"a DID is a string, not {type(did).__name__}")
    if not did.startswith(DID_KEY_PREFIX):
        raise Refused("bad-did", "not a did:key with a base58btc ('z') multibase key")
    b58 = did[len(DID_KEY_PREFIX):]
    if len(b58) > MAX_B58_LEN:
        raise Refused("bad-did", f"the key part is {len(b58)} characters; at most {MAX_B58_LEN}")
    if not b58:
        raise Refused("bad-did", "the key part is empty")
    if not _B58BTC.fullmatch(b58):
        raise Refused("bad-did", "the key part is not base58btc")
    raw = base58.b58decode(b58.encode("ascii"))
    known = _LENGTHS.get(raw[:2])
    if known is None:
        raise Refused("bad-did", f"multicodec prefix {raw[:2].hex()} is neither ed01 "
                                 "(Ed25519) nor 8024 (P-256)")
    curve, length = known
    if len(raw) != length:
        raise Refused("bad-did", f"a {curve} did:key decodes to {length} bytes, this one to "
                                 f"{len(raw)}")
    return curve, raw[2:]


@lru_cache(maxsize=8192)
def _verifying_key(did: str) -> tuple[Ed25519PublicKey, bytes]:
    curve, public = public_from_did(did)
    if curve != "ed25519":
        raise Refused("not-ed25519", "a P-256 did:key never signs muretai envelopes")
    if public in SMALL_ORDER_ENCODINGS:
        raise Refused("small-order-key", "the DID's key is a small-order point; it would "
                                         "verify forged signatures")
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    return Ed25519PublicKey.from_public_bytes(public), public


def verifying_key_from_did(did: object) -> tuple[Ed25519PublicKey, bytes]:
    """The one door from a DID to a key that will answer a signature question."""
    if not isinstance(did, str):
        raise Refused("bad-did", f"a DID is a string, not {type(did).__name__}")
    return _verifying_key(did)


def x25519_from_ed25519_public(public: bytes) -> bytes:
    """The X25519 key-agreement key of an Ed25519 key (birational map u = (1+y)/(1-y))."""
    p = 2**255 - 19
    y = int.from_bytes(public, "little") & ((1 << 255) - 1)
    denominator = (1 - y) % p
    u = 0 if denominator == 0 else (1 + y) * pow(denominator, p - 2, p) % p
    return u.to_bytes(32, "little")
