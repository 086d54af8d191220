"""Strict base64 (seam §3.1): one spelling per byte string."""

from __future__ import annotations

import binascii

from muretai_cli.errors import Refused

MAX_B64_LEN = 4096


def b64encode(raw: bytes) -> str:
    """Standard alphabet, padded: the only spelling muretai writes."""
    return binascii.b2a_base64(raw, newline=False).decode("ascii")


def b64decode_strict(text: object, *, code: str = "sig-not-canonical-base64",
                     max_len: int = MAX_B64_LEN) -> bytes:
    """Decode standard padded base64 that re-encodes to exactly ``text``, or refuse.

    The re-encode test closes the trailing-bit hole: ``…BQ==`` and ``…Bf==`` decode to the
    same bytes, and only one of them is the spelling an honest encoder produces.
    """
    if not isinstance(text, str):
        raise Refused(code, f"expected a base64 string, got {type(text).__name__}")
    length = len(text)
    if length > max_len or length % 4:
        raise Refused(code, f"length {length} is not a multiple of 4 (or is too long)")
    try:
        spelled = text.encode("ascii")
        raw = binascii.a2b_base64(spelled, strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        raise Refused(code, "not standard-alphabet padded base64") from None
    if binascii.b2a_base64(raw, newline=False) != spelled:  # (bytes to bytes: no decode)
        raise Refused(code, "decodes, but does not re-encode to the same string "
                            "(non-zero trailing bits)")
    return raw


_B64URL_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def b64url_encode(raw: bytes) -> str:
    """Unpadded base64url (RFC 7515 §2): how JWS segments and JWK ``x`` values are spelled."""
    return binascii.b2a_base64(raw, newline=False).decode("ascii").rstrip("=") \
        .replace("+", "-").replace("/", "_")


def b64url_decode_strict(text: object, *, code: str = "not-canonical-base64url",
                         limit: int = 65536) -> bytes:
    """Decode unpadded base64url that re-encodes to exactly ``text``, or refuse.

    Padding, the standard alphabet, whitespace, a length of 1 mod 4 and non-zero trailing
    bits are all refused rather than repaired: a key or a token has one spelling.
    """
    if not isinstance(text, str):
        raise Refused(code, f"expected a base64url string, got {type(text).__name__}")
    if len(text) > limit:
        raise Refused(code, f"{len(text)} characters is longer than {limit}")
    if not _B64URL_ALPHABET.issuperset(text):
        raise Refused(code, "characters outside the unpadded base64url alphabet (padding, "
                            "'+', '/', whitespace)")
    if len(text) % 4 == 1:
        raise Refused(code, "a length of 1 mod 4 encodes no whole byte")
    std = text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4)
    try:
        raw = binascii.a2b_base64(std.encode("ascii"), strict_mode=True)
    except binascii.Error:
        raise Refused(code, "not base64url") from None
    if b64url_encode(raw) != text:
        raise Refused(code, "decodes, but does not re-encode to the same string "
                            "(non-zero trailing bits)")
    return raw
