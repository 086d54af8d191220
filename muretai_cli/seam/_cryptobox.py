"""Sealed boxes (seam §9): X25519 from the identity seed, HKDF-SHA256, ChaCha20-Poly1305.

A blob is standard padded base64 of ``nonce[12] ‖ ciphertext ‖ tag[16]``. The box is
static-static: ``seal`` by A to B's ``enc_pub`` and ``open`` by B with A's ``enc_pub`` derive
the same key. The associated data is part of the box and is never defaulted: a caller that
forgets it must not get the empty value by accident, so every function takes ``ad`` by
keyword with no default.
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam._b64 import b64decode_strict, b64encode
from muretai_cli.seam._encpub import is_enc_pub
from muretai_cli.seam._limits import MAX_BLOB_CHARS

if TYPE_CHECKING:
    from muretai_cli.seam._ed25519 import SigningKey

X25519_DOMAIN = b"agentnet-x25519:"
BOX_INFO = b"agentnet-box-v1"
BOX_SALT = bytes(32)
NONCE_BYTES = 12
TAG_BYTES = 16
# A sanity bound on what open will even decode (memory, not a verdict); transports cap lower.


def x25519_private_from_seed(seed: bytes) -> X25519PrivateKey:
    """The identity's X25519 key: ``sha256("agentnet-x25519:" ‖ seed)``."""
    return X25519PrivateKey.from_private_bytes(hashlib.sha256(X25519_DOMAIN + seed).digest())


def enc_pub_from_seed(seed: bytes) -> str:
    """The public half of the identity's X25519 key, 64 lowercase hex: safe to publish."""
    public = x25519_private_from_seed(seed).public_key()
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def parse_enc_pub(enc_pub: object) -> X25519PublicKey:
    """An ``enc_pub`` (exactly 64 lowercase hex), or ``Refused('bad-enc-pub')``."""
    if not is_enc_pub(enc_pub):
        raise Refused("bad-enc-pub", "an enc_pub is exactly 64 lowercase hex characters")
    return X25519PublicKey.from_public_bytes(bytes.fromhex(enc_pub))


def box_key(private: X25519PrivateKey, their_enc_pub: object) -> bytes:
    """HKDF-SHA256(X25519(mine, theirs), salt 32 zero bytes, info ``agentnet-box-v1``)."""
    public = parse_enc_pub(their_enc_pub)
    try:
        shared = private.exchange(public)
    except ValueError:  # a small-order point: the shared secret would be all zeros
        raise Refused("bad-enc-pub", "that enc_pub is a small-order point") from None
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=BOX_SALT,
                info=BOX_INFO).derive(shared)


def seal_box(key: SigningKey, their_enc_pub: str, plaintext: bytes, *, ad: bytes) -> str:
    """Seal ``plaintext`` from ``key`` to the holder of ``their_enc_pub`` under ``ad``.

    A fresh random nonce every call. Raises ``Refused('bad-enc-pub')`` for a key that is not
    one; ``ad`` is authenticated, not encrypted, and must be given (``b""`` for none).
    """
    if not isinstance(plaintext, bytes) or not isinstance(ad, bytes):
        raise TypeError("seal_box takes bytes for plaintext and ad")
    nonce = os.urandom(NONCE_BYTES)
    sealed = ChaCha20Poly1305(key.box_key(their_enc_pub)).encrypt(nonce, plaintext, ad)
    return b64encode(nonce + sealed)


def open_box(key: SigningKey, their_enc_pub: object, blob: object, *, ad: bytes) -> bytes | None:
    """The plaintext of a box sealed to ``key`` by ``their_enc_pub`` under ``ad``, or None.

    None for every failure -- a blob that is not strict base64, too short to hold a nonce
    and a tag, a malformed or wrong key, other associated data: never an exception, never
    part of a plaintext.
    """
    if not isinstance(ad, bytes):
        return None
    try:
        raw = b64decode_strict(blob, code="bad-blob", max_len=MAX_BLOB_CHARS)
        if len(raw) < NONCE_BYTES + TAG_BYTES:
            return None
        aead = ChaCha20Poly1305(key.box_key(their_enc_pub))
        return aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], ad)
    except (MuretaiError, InvalidTag, ValueError):
        return None
