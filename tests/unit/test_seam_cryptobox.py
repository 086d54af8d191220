"""Sealed boxes (seam §9): what seals opens under the same key and AD, and nothing else does."""

from __future__ import annotations

import base64
import inspect

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from muretai_cli.errors import Refused
from muretai_cli.seam import SigningKey, enc_pub_from_seed, open_box, seal_box

ALICE = SigningKey(bytes([0x11]) * 32)
BOB = SigningKey(bytes([0x22]) * 32)
EVE = SigningKey(bytes([0x33]) * 32)
THOUSAND = settings(max_examples=1000, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
MISMATCHES = settings(max_examples=150, deadline=None, database=None,
                      suppress_health_check=[HealthCheck.too_slow])


@THOUSAND
@given(st.binary(max_size=2048), st.binary(max_size=64))
def test_seal_then_open_round_trips(plaintext: bytes, ad: bytes) -> None:
    blob = seal_box(ALICE, BOB.enc_pub, plaintext, ad=ad)
    assert open_box(BOB, ALICE.enc_pub, blob, ad=ad) == plaintext
    # static-static: the sender can open what it sealed, with the roles swapped
    assert open_box(ALICE, BOB.enc_pub, blob, ad=ad) == plaintext


@MISMATCHES
@given(st.binary(max_size=256), st.binary(max_size=32), st.binary(min_size=1, max_size=32),
       st.data())
def test_every_mismatch_is_no_plaintext(plaintext: bytes, ad: bytes, other_ad: bytes,
                                        data: st.DataObject) -> None:
    blob = seal_box(ALICE, BOB.enc_pub, plaintext, ad=ad)
    raw = base64.b64decode(blob)
    # another recipient, another claimed sender, other associated data
    assert open_box(EVE, ALICE.enc_pub, blob, ad=ad) is None
    assert open_box(BOB, EVE.enc_pub, blob, ad=ad) is None
    if other_ad != ad:
        assert open_box(BOB, ALICE.enc_pub, blob, ad=other_ad) is None
    # any one bit flipped, anywhere in nonce, ciphertext or tag
    bit = data.draw(st.integers(0, len(raw) * 8 - 1))
    flipped = bytearray(raw)
    flipped[bit // 8] ^= 1 << (bit % 8)
    assert open_box(BOB, ALICE.enc_pub, base64.b64encode(bytes(flipped)).decode(), ad=ad) is None
    # any truncation
    cut = data.draw(st.integers(0, len(raw) - 1))
    assert open_box(BOB, ALICE.enc_pub, base64.b64encode(raw[:cut]).decode(), ad=ad) is None


@pytest.mark.parametrize("blob", [
    None, 5, b"bytes", "", "not base64!", "AAAA", "YQ", "YR==",  # YR== has trailing bits
    " " + base64.b64encode(bytes(40)).decode(), base64.urlsafe_b64encode(bytes([0xfb]) * 40).decode(),
])
def test_a_blob_that_is_not_strict_base64_of_a_box_opens_to_nothing(blob: object) -> None:
    assert open_box(BOB, ALICE.enc_pub, blob, ad=b"") is None


@pytest.mark.parametrize("enc_pub", [None, "", "00" * 31, "AB" * 32, "zz" * 32, "00" * 32,
                                     ALICE.enc_pub + "00"])
def test_a_malformed_or_small_order_enc_pub_opens_nothing_and_seals_nothing(
        enc_pub: object) -> None:
    blob = seal_box(ALICE, BOB.enc_pub, b"x", ad=b"")
    assert open_box(BOB, enc_pub, blob, ad=b"") is None
    with pytest.raises(Refused) as info:
        seal_box(ALICE, enc_pub, b"x", ad=b"")  # type: ignore[arg-type]
    assert info.value.code == "bad-enc-pub"


def test_associated_data_has_no_default() -> None:
    for fn in (seal_box, open_box):
        param = inspect.signature(fn).parameters["ad"]
        assert param.default is inspect.Parameter.empty
        assert param.kind is inspect.Parameter.KEYWORD_ONLY
    blob = seal_box(ALICE, BOB.enc_pub, b"x", ad=b"")
    assert open_box(BOB, ALICE.enc_pub, blob, ad=None) is None  # type: ignore[arg-type]


def test_blob_framing_and_enc_pub_shape() -> None:
    blob = seal_box(ALICE, BOB.enc_pub, b"hello", ad=b"")
    assert len(base64.b64decode(blob)) == 12 + 5 + 16
    assert blob != seal_box(ALICE, BOB.enc_pub, b"hello", ad=b"")  # a fresh nonce each time
    assert ALICE.enc_pub == enc_pub_from_seed(ALICE.seed)
    assert len(ALICE.enc_pub) == 64 and ALICE.enc_pub == ALICE.enc_pub.lower()
    assert ALICE.box_key(BOB.enc_pub) == BOB.box_key(ALICE.enc_pub)
