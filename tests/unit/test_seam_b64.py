"""Strict base64 for ``sig`` (seam §3.1): one spelling per byte string."""

from __future__ import annotations

import base64
import binascii

import pytest

from muretai_cli.errors import Refused
from muretai_cli.seam import b64decode_strict, b64encode

RAW = bytes(range(64))
GOOD = base64.b64encode(RAW).decode()
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _siblings(text: str) -> list[str]:
    """Other spellings that a lenient decoder reads as the same bytes (trailing bits set)."""
    data = text.rstrip("=")
    pad = len(text) - len(data)
    free_bits = {1: 2, 2: 4}[pad]
    last = ALPHABET.index(data[-1])
    return [data[:-1] + ALPHABET[last | bits] + "=" * pad
            for bits in range(1, 1 << free_bits)]


def test_round_trip() -> None:
    assert b64encode(RAW) == GOOD
    assert b64decode_strict(GOOD) == RAW
    assert b64decode_strict("") == b""


@pytest.mark.parametrize("raw", [bytes(range(64)), b"\xff" * 64, b"x", b"xy"])
def test_trailing_bit_siblings_refused(raw: bytes) -> None:
    text = b64encode(raw)
    siblings = _siblings(text)
    assert siblings
    for sibling in siblings:
        assert base64.b64decode(sibling) == raw  # a lenient reader sees the same bytes
        with pytest.raises(Refused) as info:
            b64decode_strict(sibling)
        assert info.value.code == "sig-not-canonical-base64"
        assert "re-encode" in info.value.detail


@pytest.mark.parametrize("text", [
    GOOD.rstrip("="),                      # unpadded
    GOOD[:-2] + "=",                       # short padding
    GOOD + "====",                         # extra padding
    GOOD.replace("+", "-").replace("/", "_") if ("+" in GOOD or "/" in GOOD) else "-" + GOOD[1:],
    " " + GOOD[1:],                        # whitespace
    GOOD[:40] + "\n" + GOOD[41:],          # newline
    "=" + GOOD[1:],                        # padding at the start
    GOOD[:-4] + "A=A=",                    # padding in the middle
    "é" * 88,                              # not ASCII
    "A" * 8192,                            # too long
])
def test_malformed_spellings_refused(text: str) -> None:
    with pytest.raises(Refused) as info:
        b64decode_strict(text)
    assert info.value.code == "sig-not-canonical-base64"


def test_length_is_named() -> None:
    with pytest.raises(Refused) as info:
        b64decode_strict(GOOD.rstrip("="))
    assert "multiple of 4" in info.value.detail


@pytest.mark.parametrize("value", [None, 1, b"AAAA", ["AAAA"]])
def test_non_strings_refused(value: object) -> None:
    with pytest.raises(Refused):
        b64decode_strict(value)


def test_strict_mode_alone_would_accept_a_sibling() -> None:
    """Why the re-encode comparison exists: binascii's strict mode checks the alphabet and
    padding, not the trailing bits."""
    sibling = _siblings(GOOD)[0]
    assert binascii.a2b_base64(sibling.encode(), strict_mode=True) == RAW
    with pytest.raises(Refused):
        b64decode_strict(sibling)
