"""Ed25519 keys, signing and strict verification (seam §2.1).

``cryptography`` (OpenSSL) verifies with the cofactorless equation and refuses a
non-canonical S, but it accepts small-order public keys and a small-order R. The table
below is libsodium's: seven y-coordinates, each with the sign bit clear and set.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from muretai_cli.errors import Refused
from muretai_cli.seam._b64 import b64decode_strict, b64encode
from muretai_cli.seam._smallorder import SMALL_ORDER_ENCODINGS

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey


BOX_KEYS_KEPT = 512  # box keys one SigningKey remembers (one per peer enc_pub)


class SigningKey:
    """An Ed25519 private key held as its 32-byte seed. Never printed, never logged."""

    __slots__ = ("_boxes", "_did", "_enc_private", "_private", "_public", "_seed")

    def __init__(self, seed: bytes) -> None:
        if not isinstance(seed, bytes) or len(seed) != 32:
            raise ValueError("an Ed25519 seed is exactly 32 bytes")
        self._seed = seed
        self._private = Ed25519PrivateKey.from_private_bytes(seed)
        self._public = self._private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self._did: str | None = None
        self._enc_private: X25519PrivateKey | None = None
        self._boxes: dict[str, bytes] = {}  # enc_pub -> box key (see box_key)

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(os.urandom(32))

    @property
    def seed(self) -> bytes:
        return self._seed

    @property
    def public_bytes(self) -> bytes:
        return self._public

    @property
    def did(self) -> str:
        if self._did is None:
            from muretai_cli.seam._didkey import did_from_public

            self._did = did_from_public(self._public)
        return self._did

    def _x25519(self) -> X25519PrivateKey:
        if self._enc_private is None:
            from muretai_cli.seam._cryptobox import x25519_private_from_seed

            self._enc_private = x25519_private_from_seed(self._seed)
        return self._enc_private

    @property
    def enc_pub(self) -> str:
        """This identity's X25519 public key for sealed boxes (seam §9), 64 lowercase hex."""
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        return self._x25519().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

    def box_key(self, their_enc_pub: object) -> bytes:
        """The 32-byte box key shared with ``their_enc_pub``; ``Refused('bad-enc-pub')``.

        Kept per peer key (a few hundred at most): a drain opens many boxes from few peers,
        and the X25519 exchange is a third of opening one."""
        if isinstance(their_enc_pub, str):
            known = self._boxes.get(their_enc_pub)
            if known is not None:
                return known
        from muretai_cli.seam._cryptobox import box_key

        key = box_key(self._x25519(), their_enc_pub)  # refuses anything not an enc_pub
        if len(self._boxes) >= BOX_KEYS_KEPT:
            self._boxes.clear()
        self._boxes[their_enc_pub] = key  # type: ignore[index]
        return key

    def sign(self, payload: bytes) -> str:
        """Sign exact bytes; returns the signature in strict base64."""
        return b64encode(self._private.sign(payload))

    def __repr__(self) -> str:
        return f"SigningKey(did={self.did!r})"


def verify_strict(public: Ed25519PublicKey, public_raw: bytes, payload: bytes,
                  sig_b64: object) -> None:
    """Verify ``sig_b64`` over ``payload`` under a key, refusing every weak form.

    Order: spelling, length, small-order key, small-order R, the equation.
    """
    raw = b64decode_strict(sig_b64)
    if len(raw) != 64:
        raise Refused("bad-signature-length", f"a signature is 64 bytes, this one is {len(raw)}")
    if public_raw in SMALL_ORDER_ENCODINGS:
        raise Refused("small-order-key", "the signing key is a small-order point")
    if raw[:32] in SMALL_ORDER_ENCODINGS:
        raise Refused("small-order-key", "the signature's R is a small-order point")
    try:
        public.verify(raw, payload)
    except InvalidSignature:
        raise Refused("bad-signature", "the signature does not verify under that key") from None


def verify_signature(did: str, payload: bytes, sig: object) -> None:
    """Verify ``sig`` over exact ``payload`` bytes under the key ``did`` names (strictly)."""
    from muretai_cli.seam._didkey import verifying_key_from_did

    public, raw = verifying_key_from_did(did)
    verify_strict(public, raw, payload, sig)
