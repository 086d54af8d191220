"""An identity exported for backup or a move: one passphrase-encrypted JSON file.

    {"typ": "muretai-identity-export", "v": 1,
     "kdf": {"name": "scrypt", "n": 32768, "r": 8, "p": 1, "salt": <16 bytes, base64>},
     "cipher": "chacha20-poly1305", "nonce": <12 bytes, base64>,
     "ciphertext": <base64 of the sealed {"name", "did", "seed", "created"}>}

The key is scrypt(passphrase, salt, n, r, p) (32 bytes); the associated data is the
canonical bytes of the file without ``ciphertext``, so the format, the KDF and its
parameters cannot be changed without the open failing. Opening refuses parameters weaker
than the ones written here (or so costly they would stall the machine) before any work.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from muretai_cli.errors import InputError, Refused

EXPORT_TYP = "muretai-identity-export"
EXPORT_VERSION = 1
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1  # ~32 MiB and a fraction of a second per try
_MIN_N, _MIN_R, _MIN_P = 2**15, 8, 1
_MAX_N, _MAX_R, _MAX_P = 2**20, 16, 4
_MAX_MEMORY = 1 << 30  # 128 * r * n bytes
MIN_PASSPHRASE = 8
_FIELDS = {"typ", "v", "kdf", "cipher", "nonce", "ciphertext"}


@dataclass(frozen=True, slots=True)
class ExportedIdentity:
    """What an export file holds, once opened."""

    name: str
    did: str
    seed: bytes
    created: int


def _key(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode("utf-8"))


def seal_identity(name: str, did: str, seed: bytes, created: int, passphrase: str) -> bytes:
    """The export file's bytes for one identity, sealed under ``passphrase``."""
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    from muretai_cli.seam import b64encode, canonical_bytes

    if len(passphrase) < MIN_PASSPHRASE:
        raise InputError("weak-passphrase", f"a passphrase of at least {MIN_PASSPHRASE} "
                                            "characters protects the export")
    salt, nonce = os.urandom(16), os.urandom(12)
    header: dict[str, Any] = {
        "typ": EXPORT_TYP, "v": EXPORT_VERSION,
        "kdf": {"name": "scrypt", "n": SCRYPT_N, "r": SCRYPT_R, "p": SCRYPT_P,
                "salt": b64encode(salt)},
        "cipher": "chacha20-poly1305", "nonce": b64encode(nonce)}
    plain = canonical_bytes({"name": name, "did": did, "seed": seed.hex(), "created": created})
    sealed = ChaCha20Poly1305(_key(passphrase, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)).encrypt(
        nonce, plain, canonical_bytes(header))
    return (json.dumps({**header, "ciphertext": b64encode(sealed)}, indent=2) + "\n").encode()


def _int(kdf: dict[str, Any], name: str, low: int, high: int) -> int:
    value = kdf.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError("bad-export", f"kdf.{name} is not an integer")
    if value < low:
        raise InputError("weak-kdf", f"kdf.{name} is {value}, below {low}: an export this "
                                     "cheap to guess is refused")
    if value > high:
        raise InputError("bad-export", f"kdf.{name} is {value}, above {high}")
    return value


def open_identity(raw: bytes, passphrase: str, source: str) -> ExportedIdentity:
    """The identity in an export file; ``InputError`` for a file that is not one (or whose
    KDF is too weak), ``Refused('wrong-passphrase')`` when it does not open."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    from muretai_cli.errors import MuretaiError
    from muretai_cli.seam import SigningKey, b64decode_strict, canonical_bytes, parse_document

    doc = parse_document(raw)
    if not isinstance(doc, dict) or doc.get("typ") != EXPORT_TYP:
        raise InputError("bad-export", f"{source} is not a muretai identity export (typ "
                                       f"{EXPORT_TYP!r})")
    if doc.get("v") != EXPORT_VERSION:
        raise InputError("bad-export", f"{source}: export version {doc.get('v')!r} is not "
                                       f"{EXPORT_VERSION}", hint="a newer muretai wrote it")
    if set(doc) != _FIELDS:
        raise InputError("bad-export", f"{source}: fields {sorted(set(doc) ^ _FIELDS)} are "
                                       "missing or unknown")
    kdf, cipher = doc["kdf"], doc["cipher"]
    if not isinstance(kdf, dict) or kdf.get("name") != "scrypt" or \
            set(kdf) != {"name", "n", "r", "p", "salt"}:
        raise InputError("bad-export", f"{source}: the kdf is not scrypt {{n, r, p, salt}}")
    if cipher != "chacha20-poly1305":
        raise InputError("bad-export", f"{source}: cipher {cipher!r} is not chacha20-poly1305")
    n = _int(kdf, "n", _MIN_N, _MAX_N)
    r = _int(kdf, "r", _MIN_R, _MAX_R)
    p = _int(kdf, "p", _MIN_P, _MAX_P)
    if n & (n - 1) or 128 * r * n > _MAX_MEMORY:
        raise InputError("bad-export", f"{source}: kdf.n must be a power of two and "
                                       "128*r*n at most 1 GiB")
    try:
        salt = b64decode_strict(kdf["salt"], code="bad-export")
        nonce = b64decode_strict(doc["nonce"], code="bad-export")
        sealed = b64decode_strict(doc["ciphertext"], code="bad-export")
    except MuretaiError as exc:
        raise InputError("bad-export", f"{source}: {exc.detail}") from None
    if len(salt) < 16 or len(nonce) != 12:
        raise InputError("bad-export", f"{source}: the salt or the nonce has the wrong length")
    header = {k: v for k, v in doc.items() if k != "ciphertext"}
    try:
        plain = ChaCha20Poly1305(_key(passphrase, salt, n, r, p)).decrypt(
            nonce, sealed, canonical_bytes(header))
    except InvalidTag:
        raise Refused("wrong-passphrase", f"{source} does not open with this passphrase (or "
                                          "it was changed)") from None
    body = parse_document(plain)
    try:
        seed = bytes.fromhex(body["seed"])
        key = SigningKey(seed)
        name, created = str(body["name"]), int(body["created"])
    except (KeyError, TypeError, ValueError):
        raise InputError("bad-export", f"{source}: the sealed identity is malformed") from None
    if key.did != body.get("did"):
        raise InputError("bad-export", f"{source}: the sealed seed is not the sealed DID's")
    return ExportedIdentity(name, key.did, seed, created)
