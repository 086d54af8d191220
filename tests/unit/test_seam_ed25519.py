"""Strict Ed25519 (seam §2.1): small-order keys and R refused, cofactorless equation.

Every case here is one that ``cryptography`` (OpenSSL) alone would get wrong, or that a
cofactored verifier would get wrong, built with the pure-Python curve in ``ed25519_math``.
"""

from __future__ import annotations

import base64
import itertools
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from muretai_cli.errors import Refused
from muretai_cli.seam import (
    SMALL_ORDER_ENCODINGS,
    SigningKey,
    b64encode,
    canonical_bytes,
    did_from_public,
    is_small_order,
    verify_card_envelope,
    verify_envelope,
    verify_signature,
)
from muretai_cli.seam._didkey import _verifying_key
from tests import ed25519_math as ed

RECIPIENT = SigningKey(bytes([7]) * 32).did
IDENTITY_ENC = bytes([1]) + bytes(31)
UNIVERSAL_BLOB = "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
HONEST_SEED = bytes(range(32))


def _fields(from_did: str, message_id: str, text: str = "pay the invoice") -> dict[str, Any]:
    return {"contextId": None, "from": from_did, "messageId": message_id, "text": text,
            "timestamp": 1784273681, "to": RECIPIENT}


def _grind(a_enc: bytes, r_enc: bytes, want: Any, from_did: str) -> dict[str, Any]:
    """Six fields whose challenge ``h = H(R || A || payload)`` satisfies ``want(h)``."""
    for i in itertools.count():
        fields = _fields(from_did, f"m-{i}")
        if want(ed.challenge(r_enc, a_enc, canonical_bytes(fields))):
            return fields
    raise AssertionError("unreachable")


def _openssl_accepts(public: bytes, sig: bytes, payload: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(sig, payload)
    except InvalidSignature:
        return False
    return True


def _refusal(env: dict[str, Any]) -> str:
    with pytest.raises(Refused) as info:
        verify_envelope(env, to_did=RECIPIENT)
    return info.value.code


@pytest.fixture(autouse=True)
def _fresh_key_cache() -> None:
    _verifying_key.cache_clear()


# -- the table itself, checked against the curve ------------------------------------------

def test_small_order_table_is_the_eight_torsion_subgroup() -> None:
    """Each of the 14 encodings decodes (y=p, p+1 after reduction) to P with 8P = O, and
    together they name all eight points of the 8-torsion subgroup, each sign bit both ways."""
    assert len(SMALL_ORDER_ENCODINGS) == 14
    points: set[tuple[int, int]] = set()
    orders: dict[int, int] = {}
    for enc in SMALL_ORDER_ENCODINGS:
        y = int.from_bytes(enc, "little") & ((1 << 255) - 1)
        pt = ed.decode(enc, reduce=True)
        assert pt is not None, enc.hex()
        if y >= ed.P:  # the two non-canonical y's a lenient decoder reduces
            assert ed.decode(enc) is None
        assert ed.is_identity(ed.mul(8, pt)), enc.hex()
        order = ed.order_of(pt)
        assert order is not None
        orders[order] = orders.get(order, 0) + 1
        points.add(ed.affine(pt))
    assert len(points) == 8
    # order 1: y=1, y=p+1 (x2 signs); order 2: y=p-1 (x2); order 4: y=0, y=p (x2); order 8: 4
    assert orders == {1: 4, 2: 2, 4: 4, 8: 4}
    # and the subgroup really is those eight: the multiples of any order-8 point
    gen = next(ed.decode(e) for e in SMALL_ORDER_ENCODINGS
               if ed.decode(e) is not None and ed.order_of(ed.decode(e)) == 8)  # type: ignore[arg-type]
    assert gen is not None
    assert {ed.affine(ed.mul(j, gen)) for j in range(8)} == points


def test_honest_keys_are_not_in_the_table() -> None:
    for seed in (bytes(32), bytes([255]) * 32, HONEST_SEED):
        assert not is_small_order(SigningKey(seed).public_bytes)
    assert ed.encode(ed.BASE) not in SMALL_ORDER_ENCODINGS


# -- small-order public keys --------------------------------------------------------------

def test_cryptography_alone_accepts_the_universal_blob_and_we_refuse_it() -> None:
    """Identity key + (R = identity, S = 0) satisfies the equation for every message."""
    sig = base64.b64decode(UNIVERSAL_BLOB)
    did = did_from_public(IDENTITY_ENC)
    for text in ("pay the invoice", "anything at all", ""):
        fields = _fields(did, "m1", text)
        assert _openssl_accepts(IDENTITY_ENC, sig, canonical_bytes(fields))
        assert _refusal({**fields, "sig": UNIVERSAL_BLOB}) == "small-order-key"
        with pytest.raises(Refused, match="small-order"):
            verify_signature(did, canonical_bytes(fields), UNIVERSAL_BLOB)


@pytest.mark.parametrize("enc", sorted(SMALL_ORDER_ENCODINGS), ids=lambda e: e.hex()[:6] + (
    "-neg" if e[31] & 0x80 else ""))
def test_every_small_order_key_forges_under_openssl_and_is_refused(enc: bytes) -> None:
    """For a key A of order n | 8, ``R = [s]B, S = s`` verifies whenever 8 | h, for any s and
    without any private key. R is an ordinary point, so only the key check can stop it:
    OpenSSL says yes to all fourteen; the seam says small-order-key before it asks."""
    did = did_from_public(enc)
    s = 0xC0FFEE
    r_enc = ed.encode(ed.mul(s, ed.BASE))
    assert r_enc not in SMALL_ORDER_ENCODINGS
    fields = _grind(enc, r_enc, lambda h: h % 8 == 0, did)
    sig = r_enc + s.to_bytes(32, "little")
    assert _openssl_accepts(enc, sig, canonical_bytes(fields))
    assert _refusal({**fields, "sig": b64encode(sig)}) == "small-order-key"


def test_small_order_key_refused_in_card_envelopes_too() -> None:
    did = did_from_public(IDENTITY_ENC)
    env = {"v": 1, "typ": "agentcard", "card": {"did": did, "name": "x"}, "ts": 1,
           "sig": UNIVERSAL_BLOB}
    with pytest.raises(Refused) as info:
        verify_card_envelope(env, expected_did=did)
    assert info.value.code == "small-order-key"


# -- small-order R --------------------------------------------------------------------------

@pytest.mark.parametrize("enc", sorted(SMALL_ORDER_ENCODINGS), ids=lambda e: e.hex()[:6] + (
    "-neg" if e[31] & 0x80 else ""))
def test_every_small_order_r_is_refused_by_name(enc: bytes) -> None:
    key = SigningKey(HONEST_SEED)
    fields = _fields(key.did, "m1")
    honest = base64.b64decode(key.sign(canonical_bytes(fields)))
    env = {**fields, "sig": b64encode(enc + honest[32:])}
    assert _refusal(env) == "small-order-key"


def _mixed_order_key() -> tuple[int, bytes, ed.Point]:
    """``A = [a]B + T8``: a key that is not small-order, with an order-8 torsion part."""
    a, _ = ed.secret_scalar(HONEST_SEED)
    t8 = ed.decode(bytes.fromhex(
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"))
    assert t8 is not None and ed.order_of(t8) == 8
    a_enc = ed.encode(ed.add(ed.mul(a, ed.BASE), t8))
    assert a_enc not in SMALL_ORDER_ENCODINGS
    return a, a_enc, t8


def test_every_canonical_small_order_r_makes_an_openssl_valid_signature_we_refuse() -> None:
    """With a mixed-order key ``A = [a]B + T8``, ``R = [j]T8`` and ``S = h·a`` satisfy the
    cofactorless equation whenever ``h ≡ -j (mod 8)``. OpenSSL accepts all eight; only the
    small-order-R check stands between them and the inbox."""
    a, a_enc, t8 = _mixed_order_key()
    did = did_from_public(a_enc)
    seen = 0
    for j in range(8):
        r_enc = ed.encode(ed.mul(j, t8))
        assert r_enc in SMALL_ORDER_ENCODINGS
        fields = _grind(a_enc, r_enc, lambda h, j=j: (h + j) % 8 == 0, did)
        h = ed.challenge(r_enc, a_enc, canonical_bytes(fields))
        sig = r_enc + (h * a % ed.L).to_bytes(32, "little")
        assert ed.cofactorless_holds(a_enc, canonical_bytes(fields), sig)
        assert _openssl_accepts(a_enc, sig, canonical_bytes(fields))
        assert _refusal({**fields, "sig": b64encode(sig)}) == "small-order-key"
        seen += 1
    assert seen == 8


# -- cofactorless, not cofactored -----------------------------------------------------------

def _torsion_signed(want_odd: bool) -> tuple[dict[str, Any], bytes, bytes]:
    """Honestly signed by secret ``a`` over ``enc(A)``, ``A = [a]B + (0, -1)``."""
    a, _ = ed.secret_scalar(HONEST_SEED)
    t2 = ed.from_affine(0, -1)
    assert ed.order_of(t2) == 2
    a_enc = ed.encode(ed.add(ed.mul(a, ed.BASE), t2))
    did = did_from_public(a_enc)
    nonce = 0x5EED
    r_enc = ed.encode(ed.mul(nonce, ed.BASE))
    fields = _grind(a_enc, r_enc, lambda h: h % 2 == int(want_odd), did)
    sig, h = ed.sign_with_scalar(a, a_enc, canonical_bytes(fields), nonce)
    assert sig[:32] == r_enc and h % 2 == int(want_odd)
    return fields, a_enc, sig


def test_torsion_cofactored_only_signature_is_refused() -> None:
    """§2.1: with h odd, ``[h]T`` is T, so only the cofactored equation holds. A verifier
    that multiplies by 8 accepts this; the seam's verifier is cofactorless and refuses."""
    fields, a_enc, sig = _torsion_signed(want_odd=True)
    payload = canonical_bytes(fields)
    assert a_enc not in SMALL_ORDER_ENCODINGS and sig[:32] not in SMALL_ORDER_ENCODINGS
    a_pt, r_pt = ed.decode(a_enc), ed.decode(sig[:32])
    assert a_pt is not None and r_pt is not None
    assert ed.order_of(a_pt) is None and ed.order_of(r_pt) is None
    assert ed.cofactored_holds(a_enc, payload, sig)
    assert not ed.cofactorless_holds(a_enc, payload, sig)
    assert _refusal({**fields, "sig": b64encode(sig)}) == "bad-signature"


def test_torsion_control_with_even_h_verifies() -> None:
    """The control: the same construction with h even satisfies the cofactorless equation
    too, and is accepted — so the refusal above is the equation's, not a malformed case.
    (The seam refuses the 14 small-order encodings, not every key with a torsion part.)"""
    fields, a_enc, sig = _torsion_signed(want_odd=False)
    assert ed.cofactorless_holds(a_enc, canonical_bytes(fields), sig)
    assert verify_envelope({**fields, "sig": b64encode(sig)}, to_did=RECIPIENT) == fields


@pytest.mark.parametrize("public", [b"\xff" * 32, (2).to_bytes(32, "little"),
                                    (7).to_bytes(32, "little")])
def test_off_curve_keys_are_refused_not_crashed_on(public: bytes) -> None:
    """Bytes that decode to no curve point: the DID spells them, the verifier says no."""
    assert ed.decode(public) is None
    did = did_from_public(public)
    env = {**_fields(did, "m1"), "sig": b64encode(bytes([0x11]) * 64)}
    assert _refusal(env) == "bad-signature"
