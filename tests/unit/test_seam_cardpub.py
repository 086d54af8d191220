"""The signed card envelope (seam §4), including the reject.cardpub cases the vectors lack."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from muretai_cli.errors import Refused
from muretai_cli.seam import (
    SigningKey,
    b64decode_strict,
    b64encode,
    card_envelope_payload,
    sign_card_envelope,
    verify_card_envelope,
)

OWNER = SigningKey(bytes([5]) * 32)
OTHER = SigningKey(bytes([6]) * 32)
TS = 1784273681
CARD = {"did": OWNER.did, "name": "Node", "url": "https://node.example/"}
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _env(**over: Any) -> dict[str, Any]:
    env = sign_card_envelope(OWNER, CARD, TS)
    env.update(over)
    return env


def _code(env: Any, expected_did: Any = OWNER.did) -> str:
    with pytest.raises(Refused) as info:
        verify_card_envelope(env, expected_did=expected_did)
    return info.value.code


def test_honest_envelope_verifies() -> None:
    env = _env()
    assert set(env) == {"v", "typ", "card", "ts", "sig"}
    assert verify_card_envelope(env, expected_did=OWNER.did) == CARD
    payload = card_envelope_payload(CARD, TS)
    assert payload.startswith(b'{"card":{"did":"did:key:z6Mk') and payload.endswith(
        b'"ts":1784273681,"typ":"agentcard","v":1}')


def test_signer_fills_in_its_did_and_refuses_another() -> None:
    env = sign_card_envelope(OWNER, {"name": "Node"}, TS)
    assert env["card"]["did"] == OWNER.did
    with pytest.raises(Refused) as info:
        sign_card_envelope(OWNER, {"did": OTHER.did, "name": "Node"}, TS)
    assert info.value.code == "did-mismatch"


# -- reject.cardpub --------------------------------------------------------------------------

def test_one_character_of_sig_changed_still_canonical_and_64_bytes() -> None:
    sig = _env()["sig"]
    i = 10  # a character carrying six whole bits: any substitute is canonical base64
    changed = sig[:i] + ALPHABET[(ALPHABET.index(sig[i]) + 1) % 64] + sig[i + 1:]
    assert len(b64decode_strict(changed)) == 64  # well-formed: the refusal is the equation's
    assert _code(_env(sig=changed)) == "bad-signature"


def test_signed_by_a_different_key_under_the_honest_did() -> None:
    payload = card_envelope_payload(CARD, TS)
    assert _code(_env(sig=OTHER.sign(payload))) == "bad-signature"


def test_genuine_signature_over_an_edited_card() -> None:
    sig = _env()["sig"]
    for edit in ({"name": "Evil"}, {"url": "https://evil.example/"}, {"extra": 1}):
        card = {**CARD, **edit}
        assert _code(_env(card=card, sig=sig)) == "bad-signature"
    assert _code(_env(ts=TS + 1, sig=sig)) == "bad-signature"


def test_caller_asking_for_another_did() -> None:
    env = _env()
    assert verify_card_envelope(env, expected_did=OWNER.did)
    assert _code(env, expected_did=OTHER.did) == "did-mismatch"


@pytest.mark.parametrize("expected", [None, "", 5])
def test_caller_naming_no_did(expected: Any) -> None:
    assert _code(_env(), expected_did=expected) == "did-mismatch"


def test_a_card_naming_its_forger() -> None:
    """Other signs a copy of the card that names Other: valid, but not the card asked for."""
    forged = sign_card_envelope(OTHER, {**CARD, "did": OTHER.did}, TS)
    assert verify_card_envelope(forged, expected_did=OTHER.did)
    assert _code(forged) == "did-mismatch"


# -- shape -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("over", "code"), [
    ({"v": 2}, "malformed-envelope"),
    ({"v": True}, "malformed-envelope"),
    ({"v": 1.0}, "malformed-envelope"),
    ({"v": "1"}, "malformed-envelope"),
    ({"typ": "agentcard2"}, "malformed-envelope"),
    ({"card": None}, "malformed-envelope"),
    ({"card": {"name": "x"}}, "malformed-envelope"),
    ({"card": [CARD]}, "malformed-envelope"),
    ({"ts": float(TS)}, "float-in-payload"),
    ({"ts": str(TS)}, "malformed-envelope"),
    ({"ts": True}, "malformed-envelope"),
    ({"ts": None}, "malformed-envelope"),
    ({"sig": None}, "sig-not-canonical-base64"),
    ({"card": {**CARD, "trustLevel": 1.0}}, "float-in-payload"),
    ({"card": {**CARD, "n": 2**60}}, "int-out-of-range"),
])
def test_shape_refusals(over: dict[str, Any], code: str) -> None:
    assert _code(_env(**over)) == code


def test_missing_sig() -> None:
    env = {k: v for k, v in _env().items() if k != "sig"}
    assert _code(env) == "missing-sig"


@pytest.mark.parametrize("value", [None, [], "x", 1])
def test_not_an_object(value: Any) -> None:
    assert _code(value) == "malformed-envelope"


def test_trailing_bit_sibling_of_the_card_sig() -> None:
    sig = _env()["sig"]
    assert sig.endswith("==")
    data = sig[:-2]
    sibling = data[:-1] + ALPHABET[ALPHABET.index(data[-1]) | 1] + "=="
    assert sibling != sig and base64.b64decode(sibling) == base64.b64decode(sig)
    assert _code(_env(sig=sibling)) == "sig-not-canonical-base64"


def test_p256_card_did_never_verifies() -> None:
    from muretai_cli.seam import did_from_public

    did = did_from_public(b"\x02" + bytes(32), "p256")
    env = {"v": 1, "typ": "agentcard", "card": {"did": did}, "ts": TS,
           "sig": b64encode(bytes(64))}
    assert _code(env, expected_did=did) == "not-ed25519"
