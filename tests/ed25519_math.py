"""Just enough edwards25519 arithmetic, in pure Python, to build the cases a library won't.

Test-only and slow (a scalar multiplication takes milliseconds): it exists so the tests can
construct points and signatures that no honest Ed25519 implementation will produce for us
(torsion components, small-order points) and check the seam's tables against the curve
itself rather than against another copy of the same table.

Points are extended coordinates ``(X, Y, Z, T)`` with ``x = X/Z``, ``y = Y/Z``, ``xy = T/Z``.
"""

from __future__ import annotations

import hashlib

P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = (-121665 * pow(121666, P - 2, P)) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)

Point = tuple[int, int, int, int]

IDENTITY: Point = (0, 1, 1, 0)


def _inv(x: int) -> int:
    return pow(x, P - 2, P)


def from_affine(x: int, y: int) -> Point:
    x, y = x % P, y % P
    if (y * y - x * x - 1 - D * x * x * y * y) % P:
        raise ValueError("not on the curve")
    return (x, y, 1, x * y % P)


def affine(pt: Point) -> tuple[int, int]:
    zi = _inv(pt[2])
    return pt[0] * zi % P, pt[1] * zi % P


def add(p1: Point, p2: Point) -> Point:
    """The complete twisted Edwards addition law (a = -1), valid for every pair of points."""
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % P
    b = (y1 + x1) * (y2 + x2) % P
    c = 2 * t1 * t2 * D % P
    d = 2 * z1 * z2 % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def neg(pt: Point) -> Point:
    x, y, z, t = pt
    return (-x % P, y, z, -t % P)


def mul(k: int, pt: Point) -> Point:
    """``[k]pt`` by double-and-add (not constant time; test use only)."""
    result = IDENTITY
    addend = pt
    k = k if k >= 0 else -k
    while k:
        if k & 1:
            result = add(result, addend)
        addend = add(addend, addend)
        k >>= 1
    return result


def equal(p1: Point, p2: Point) -> bool:
    x1, y1, z1, _ = p1
    x2, y2, z2, _ = p2
    return (x1 * z2 - x2 * z1) % P == 0 and (y1 * z2 - y2 * z1) % P == 0


def is_identity(pt: Point) -> bool:
    return equal(pt, IDENTITY)


def recover_x(y: int, sign: int) -> int | None:
    """The x with the given low bit for ``y`` (already reduced mod p), or None if there is none.

    ``x = 0`` with the sign bit set is answered with 0: that is how lenient decoders (and the
    small-order blocklists written for them) read it.
    """
    xx = (y * y - 1) * _inv(D * y * y + 1) % P
    if xx == 0:
        return 0
    x = pow(xx, (P + 3) // 8, P)
    if (x * x - xx) % P:
        x = x * SQRT_M1 % P
    if (x * x - xx) % P:
        return None
    if x & 1 != sign:
        x = P - x
    return x


def decode(enc: bytes, *, reduce: bool = False) -> Point | None:
    """Decode 32 bytes to a point. Non-canonical y (>= p) is refused unless ``reduce``."""
    if len(enc) != 32:
        raise ValueError("an encoding is 32 bytes")
    y = int.from_bytes(enc, "little") & ((1 << 255) - 1)
    sign = enc[31] >> 7
    if y >= P:
        if not reduce:
            return None
        y -= P
    x = recover_x(y, sign)
    if x is None:
        return None
    return from_affine(x, y)


def encode(pt: Point) -> bytes:
    x, y = affine(pt)
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


_BY = 4 * _inv(5) % P
_BX = recover_x(_BY, 0)
assert _BX is not None
BASE: Point = from_affine(_BX, _BY)


def order_of(pt: Point, limit: int = 8) -> int | None:
    """The order of a small-order point (1..limit), or None if larger."""
    acc = pt
    for n in range(1, limit + 1):
        if is_identity(acc):
            return n
        acc = add(acc, pt)
    return None


def secret_scalar(seed: bytes) -> tuple[int, bytes]:
    """RFC 8032 key expansion: the clamped scalar ``a`` and the nonce prefix."""
    digest = hashlib.sha512(seed).digest()
    scalar = bytearray(digest[:32])
    scalar[0] &= 248
    scalar[31] &= 127
    scalar[31] |= 64
    return int.from_bytes(scalar, "little"), digest[32:]


def challenge(r_enc: bytes, a_enc: bytes, message: bytes) -> int:
    """``h = SHA-512(R || A || M) mod L``."""
    return int.from_bytes(hashlib.sha512(r_enc + a_enc + message).digest(), "little") % L


def sign_with_scalar(a: int, a_enc: bytes, message: bytes, nonce: int) -> tuple[bytes, int]:
    """An Ed25519 signature by scalar ``a`` for the public encoding ``a_enc`` (which the caller
    may have chosen to differ from ``[a]B``); returns ``(signature, h)``."""
    r = nonce % L
    r_enc = encode(mul(r, BASE))
    h = challenge(r_enc, a_enc, message)
    s = (r + h * a) % L
    return r_enc + s.to_bytes(32, "little"), h


def cofactorless_holds(a_enc: bytes, message: bytes, sig: bytes) -> bool:
    """``[S]B == R + [h]A`` exactly."""
    a_pt, r_pt = decode(a_enc), decode(sig[:32])
    assert a_pt is not None and r_pt is not None
    s = int.from_bytes(sig[32:], "little")
    h = challenge(sig[:32], a_enc, message)
    return equal(mul(s, BASE), add(r_pt, mul(h, a_pt)))


def cofactored_holds(a_enc: bytes, message: bytes, sig: bytes) -> bool:
    """``[8][S]B == [8]R + [8][h]A``: blind to any torsion component."""
    a_pt, r_pt = decode(a_enc), decode(sig[:32])
    assert a_pt is not None and r_pt is not None
    s = int.from_bytes(sig[32:], "little")
    h = challenge(sig[:32], a_enc, message)
    return equal(mul(8 * s, BASE), add(mul(8, r_pt), mul(8 * h, a_pt)))
