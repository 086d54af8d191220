"""The one spelling of an ``enc_pub`` (seam §9): an X25519 public key as exactly 64 lowercase
hex characters. Text only (no crypto backend): the relay, an invite and a sealed box all
judge a key by ``is_enc_pub``."""

from __future__ import annotations

import re
from typing import TypeGuard

ENC_PUB_CHARS = 64
_ENC_PUB = re.compile(r"[0-9a-f]{64}")


def is_enc_pub(value: object) -> TypeGuard[str]:
    """Whether ``value`` is an ``enc_pub``: a str of exactly 64 lowercase hex characters."""
    return isinstance(value, str) and _ENC_PUB.fullmatch(value) is not None
