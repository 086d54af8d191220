"""did:key (seam §2): the codec's refusals, the 512-character cap, and the verifying door."""

from __future__ import annotations

import base58
import pytest

from muretai_cli.errors import Refused
from muretai_cli.seam import (
    MAX_B58_LEN,
    SigningKey,
    did_from_public,
    public_from_did,
    verifying_key_from_did,
    x25519_from_ed25519_public,
)
from muretai_cli.seam._didkey import _verifying_key

KEY = bytes(range(32))


def _did_of(raw: bytes) -> str:
    return "did:key:z" + base58.b58encode(raw).decode("ascii")


def _refused(did: object) -> Refused:
    with pytest.raises(Refused) as info:
        public_from_did(did)
    assert info.value.code == "bad-did"
    return info.value


def test_round_trip_of_an_honest_key() -> None:
    key = SigningKey(KEY)
    assert key.did.startswith("did:key:z6Mk")
    assert public_from_did(key.did) == ("ed25519", key.public_bytes)
    assert did_from_public(key.public_bytes) == key.did


def test_the_control_spelling_is_accepted() -> None:
    """The reject cases below differ from this one in exactly one thing each."""
    assert public_from_did(_did_of(b"\xed\x01" + KEY)) == ("ed25519", KEY)


# reject.did: each changes one thing about the control above
@pytest.mark.parametrize(("name", "raw", "says"), [
    ("x25519-multicodec", b"\xec\x01" + KEY, "ec01"),
    ("ed01-31-byte-key", b"\xed\x01" + KEY[:31], "33"),
    ("ed01-33-byte-key", b"\xed\x01" + KEY + b"\x00", "35"),
    ("ed01-empty-key", b"\xed\x01", "2"),
    ("no-multicodec", KEY, "multicodec"),
    ("p256-codec-ed25519-length", b"\x80\x24" + KEY, "34"),
    ("p256-codec-36-bytes", b"\x80\x24\x02" + KEY + b"\x00", "36"),
])
def test_reject_did(name: str, raw: bytes, says: str) -> None:
    assert says in _refused(_did_of(raw)).detail, name


@pytest.mark.parametrize("did", [
    "", "did:key:", "did:key:z", "did:web:example.com", "did:key:6MkeTG3bFFSLYVU7VqhgZxqr6",
    "did:key:Z6MkeTG3bFFSLYVU7VqhgZxqr6YzpaGrQtFMh1uvqGy1vDnP",
    "DID:KEY:z6MkeTG3bFFSLYVU7VqhgZxqr6YzpaGrQtFMh1uvqGy1vDnP",
    "did:key:z6MkeTG3bFFSLYVU7VqhgZxqr6YzpaGrQtFMh1uvqGy1vDn0",  # 0 is not base58btc
    "did:key:z6MkeTG3bFFSLYVU7VqhgZxqr6YzpaGrQtFMh1uvqGy1vDnl",  # nor is l
    "did:key:z6MkeTG3bFFSLYVU7VqhgZxqr6YzpaGrQtFMh1uvqGy1vDnP ",
    "did:key:z6MkeTG3bFFSLYVU7VqhgZxqr6YzpaGrQtFMh1uvqGy1vDnPé",
    " did:key:z6MkeTG3bFFSLYVU7VqhgZxqr6YzpaGrQtFMh1uvqGy1vDnP",
])
def test_malformed_strings(did: str) -> None:
    _refused(did)


@pytest.mark.parametrize("did", [None, 42, b"did:key:z6Mk", ["did:key:z6Mk"]])
def test_non_strings(did: object) -> None:
    _refused(did)
    with pytest.raises(Refused):
        verifying_key_from_did(did)


@pytest.mark.parametrize("tail", [" ", "\n", "\t", "\r\n", "\x0b", "\x0c"])
def test_trailing_whitespace_is_not_a_second_spelling(tail: str) -> None:
    """The base58 library strips trailing whitespace before decoding, so without our own
    alphabet check ``did + "\\n"`` named the same key as ``did`` (two strings, one key:
    string comparisons of ``to``/``card.did`` and replay caches would disagree)."""
    key = SigningKey(KEY)
    _refused(key.did + tail)
    env_from = key.did + tail
    with pytest.raises(Refused):
        verifying_key_from_did(env_from)


def test_every_accepted_did_has_one_spelling() -> None:
    for seed in (KEY, bytes(32), bytes([9]) * 32):
        did = SigningKey(seed).did
        assert did_from_public(public_from_did(did)[1]) == did


def test_leading_zero_bytes_change_the_length() -> None:
    """base58's leading '1's are zero bytes: they count towards the 34."""
    good = _did_of(b"\xed\x01" + KEY)
    _refused("did:key:z1" + good[len("did:key:z"):])


def test_cap_is_exactly_512_characters() -> None:
    at_cap = "did:key:z" + "2" * MAX_B58_LEN
    over = "did:key:z" + "2" * (MAX_B58_LEN + 1)
    assert MAX_B58_LEN == 512
    assert "at most" not in _refused(at_cap).detail  # decoded, then refused for its length
    assert "at most 512" in _refused(over).detail


def test_huge_did_is_refused_before_decoding(b58_decoded: list[int]) -> None:
    """100k base58 characters would take seconds of bignum work to decode; the cap answers
    before any of it (the decoder never sees more than the cap)."""
    did = "did:key:z" + "6Mk" * 33_334
    _refused(did)
    with pytest.raises(Refused):
        verifying_key_from_did(did)
    _refused("did:key:z" + "2" * MAX_B58_LEN)  # at the cap: decoded (the spy is live)
    assert b58_decoded == [MAX_B58_LEN]


def test_p256_round_trips_but_never_verifies() -> None:
    public = b"\x02" + KEY
    did = did_from_public(public, "p256")
    assert did.startswith("did:key:zDna")
    assert public_from_did(did) == ("p256", public)
    with pytest.raises(Refused) as info:
        verifying_key_from_did(did)
    assert info.value.code == "not-ed25519"


def test_did_from_public_refuses_wrong_sizes() -> None:
    with pytest.raises(ValueError):
        did_from_public(KEY[:31])
    with pytest.raises(ValueError):
        did_from_public(KEY, "p256")
    with pytest.raises(ValueError):
        did_from_public(b"\x04" + KEY, "p256")


def test_verifying_key_cache_does_not_remember_refusals_as_keys() -> None:
    _verifying_key.cache_clear()
    bad = did_from_public(bytes([1]) + bytes(31))
    for _ in range(2):
        with pytest.raises(Refused) as info:
            verifying_key_from_did(bad)
        assert info.value.code == "small-order-key"
    good = SigningKey(KEY)
    _public, raw = verifying_key_from_did(good.did)
    assert raw == good.public_bytes


def test_x25519_map_matches_the_hashed_seed_key() -> None:
    """The keyAgreement key is the Montgomery form of the Ed25519 key: the same X25519 key
    libsodium derives from the hashed, clamped seed."""
    import hashlib

    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    for seed in (KEY, bytes([3]) * 32, bytes([0xFE]) * 32):
        scalar = hashlib.sha512(seed).digest()[:32]
        expected = X25519PrivateKey.from_private_bytes(scalar).public_key().public_bytes(
            Encoding.Raw, PublicFormat.Raw)
        assert x25519_from_ed25519_public(SigningKey(seed).public_bytes) == expected
