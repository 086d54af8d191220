"""The fourteen small-order Ed25519 encodings (libsodium's table). No cryptography import."""

from __future__ import annotations

_SMALL_ORDER_Y = (
    "0000000000000000000000000000000000000000000000000000000000000000",  # y=0, order 4
    "0100000000000000000000000000000000000000000000000000000000000000",  # y=1, identity
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",  # order 8
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",  # order 8
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # y=p-1, order 2
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # y=p, i.e. 0
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # y=p+1, i.e. 1
)


def _both_signs(hexy: str) -> tuple[bytes, bytes]:
    raw = bytes.fromhex(hexy)
    return raw, raw[:31] + bytes([raw[31] | 0x80])


SMALL_ORDER_ENCODINGS: frozenset[bytes] = frozenset(
    enc for y in _SMALL_ORDER_Y for enc in _both_signs(y)
)


def is_small_order(encoding: bytes) -> bool:
    """True for the fourteen encodings of points of order 1, 2, 4 or 8."""
    return encoding in SMALL_ORDER_ENCODINGS
