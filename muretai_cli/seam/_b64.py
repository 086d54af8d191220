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
    if len(text) > max_len or len(text) % 4:
        raise Refused(code, f"length {len(text)} is not a multiple of 4 (or is too long)")
    try:
        raw = binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        raise Refused(code, "not standard-alphabet padded base64") from None
    if binascii.b2a_base64(raw, newline=False).decode("ascii") != text:
        raise Refused(code, "decodes, but does not re-encode to the same string "
                            "(non-zero trailing bits)")
    return raw
