"""The six-field message envelope (seam §3): what is signed, who names the recipient."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from muretai_cli.errors import Refused
from muretai_cli.seam import (
    SIGNED_FIELDS,
    SigningKey,
    b64encode,
    canonical_bytes,
    check_fresh,
    sign_envelope,
    signing_payload,
    six_fields,
    verify_envelope,
)

ALICE = SigningKey(bytes([1]) * 32)
BOB = SigningKey(bytes([2]) * 32)
MALLORY = SigningKey(bytes([3]) * 32)
NOW = 1784273681


def _signed(**over: Any) -> dict[str, Any]:
    env = sign_envelope(ALICE, to=BOB.did, text="pay the invoice", timestamp=NOW,
                        message_id="m1", context_id="c1")
    env.update(over)
    return env


def _code(env: Any, to_did: Any = BOB.did) -> str:
    with pytest.raises(Refused) as info:
        verify_envelope(env, to_did=to_did)
    return info.value.code


def test_signed_envelope_verifies_and_returns_exactly_six_fields() -> None:
    env = _signed()
    fields = verify_envelope(env, to_did=BOB.did)
    assert tuple(sorted(fields)) == SIGNED_FIELDS
    assert fields["from"] == ALICE.did and fields["to"] == BOB.did


def test_signed_bytes_are_the_canonical_six_fields() -> None:
    env = _signed()
    payload = signing_payload(env)
    assert payload == canonical_bytes({k: env[k] for k in SIGNED_FIELDS})
    assert payload.startswith(b'{"contextId":"c1","from":"did:key:z6Mk')
    assert b'"sig"' not in payload


def test_extra_fields_are_not_signed_and_do_not_matter() -> None:
    env = _signed(recipientDid=MALLORY.did, note="unsigned", replyTo="x")
    assert verify_envelope(env, to_did=BOB.did)["to"] == BOB.did


@pytest.mark.parametrize(("field", "value"), [
    ("contextId", "c2"), ("contextId", None), ("from", MALLORY.did), ("messageId", "m2"),
    ("text", "pay the ATTACKER"), ("text", "pay the invoice "), ("timestamp", NOW + 1),
])
def test_every_signed_field_is_covered(field: str, value: Any) -> None:
    assert _code(_signed(**{field: value})) == "bad-signature"


def test_to_is_covered_too() -> None:
    env = _signed(to=MALLORY.did)
    assert _code(env, to_did=MALLORY.did) == "bad-signature"


def test_null_context_is_signed_as_null() -> None:
    env = sign_envelope(ALICE, to=BOB.did, text="hi", timestamp=NOW, message_id="m1")
    assert env["contextId"] is None
    assert b'"contextId":null' in signing_payload(env)
    assert verify_envelope(env, to_did=BOB.did)["contextId"] is None
    # missing is read as null, so a sender may omit it
    without = {k: v for k, v in env.items() if k != "contextId"}
    assert verify_envelope(without, to_did=BOB.did)["contextId"] is None
    # but a signature over null does not cover the empty string, nor the reverse
    assert _code({**env, "contextId": ""}) == "bad-signature"


# -- the recipient comes from the caller -----------------------------------------------------

@pytest.mark.parametrize("to_did", [None, "", 0, ["x"]])
def test_verifier_without_a_recipient_refuses(to_did: Any) -> None:
    env = _signed(recipientDid=BOB.did)
    assert _code(env, to_did=to_did) == "wrong-recipient"


def test_message_for_someone_else_is_refused_even_though_it_verifies() -> None:
    env = sign_envelope(ALICE, to=MALLORY.did, text="hi", timestamp=NOW, message_id="m1")
    assert verify_envelope(env, to_did=MALLORY.did)
    assert _code(env, to_did=BOB.did) == "wrong-recipient"


def test_to_did_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        verify_envelope(_signed(), BOB.did)  # type: ignore[call-arg]


# -- the key comes from `from` ------------------------------------------------------------

def test_from_not_signer() -> None:
    """Mallory signs honestly with her own key but writes Alice's DID in `from`."""
    fields = {k: v for k, v in _signed().items() if k != "sig"}
    env = {**fields, "sig": MALLORY.sign(canonical_bytes(fields))}
    assert _code(env) == "bad-signature"


# -- field types ---------------------------------------------------------------------------

def test_float_timestamp_is_kept_as_received_never_coerced() -> None:
    # signed over the int, delivered as the integral float: a hazard, so cannot-verify
    env = _signed(timestamp=float(NOW))
    assert _code(env) == "cannot-verify"
    assert type(six_fields(env)["timestamp"]) is float


@pytest.mark.parametrize(("field", "value", "code"), [
    ("timestamp", True, "malformed-field"),
    ("timestamp", "1784273681", "bad-signature"),  # a string is verified as received
    ("timestamp", [NOW], "malformed-field"),
    ("timestamp", None, "missing-field"),
    ("timestamp", 2**53, "int-out-of-range"),
    ("timestamp", -(2**53), "int-out-of-range"),
    ("from", None, "missing-field"),
    ("to", 5, "malformed-field"),
    ("text", ["a"], "malformed-field"),
    ("messageId", "", "malformed-field"),
    ("messageId", "m" * 257, "malformed-field"),
    ("contextId", 5, "malformed-field"),
    ("from", "did:key:zNOPE", "bad-did"),
    ("sig", None, "missing-sig"),
    ("sig", 12, "sig-not-canonical-base64"),
])
def test_field_refusals(field: str, value: Any, code: str) -> None:
    assert _code(_signed(**{field: value})) == code


@pytest.mark.parametrize("field", ["from", "to", "messageId", "text", "timestamp", "sig"])
def test_missing_fields(field: str) -> None:
    env = {k: v for k, v in _signed().items() if k != field}
    assert _code(env) in ("missing-field", "missing-sig")


def test_not_a_mapping() -> None:
    values: list[Any] = [None, [], "x", 1]
    for value in values:
        with pytest.raises(Refused):
            verify_envelope(value, to_did=BOB.did)


def test_signature_lengths() -> None:
    raw = base64.b64decode(_signed()["sig"])
    assert _code(_signed(sig=b64encode(raw[:63]))) == "bad-signature-length"
    assert _code(_signed(sig=b64encode(raw + b"\x00"))) == "bad-signature-length"


def test_non_canonical_s_is_refused() -> None:
    """S + L is the same scalar; OpenSSL refuses S >= L, and so must we (malleability)."""
    from tests.ed25519_math import L

    raw = base64.b64decode(_signed()["sig"])
    s = int.from_bytes(raw[32:], "little") + L
    assert s < 2**256
    forged = raw[:32] + s.to_bytes(32, "little")
    assert _code(_signed(sig=b64encode(forged))) == "bad-signature"


def test_sign_envelope_makes_a_random_message_id() -> None:
    a = sign_envelope(ALICE, to=BOB.did, text="x", timestamp=NOW)
    b = sign_envelope(ALICE, to=BOB.did, text="x", timestamp=NOW)
    assert a["messageId"] != b["messageId"]
    assert verify_envelope(a, to_did=BOB.did)


# -- freshness -------------------------------------------------------------------------------

def test_check_fresh_is_symmetric_and_inclusive() -> None:
    check_fresh(NOW, NOW, 300)
    check_fresh(NOW + 300, NOW, 300)
    check_fresh(NOW - 300, NOW, 300)
    with pytest.raises(Refused) as ahead:
        check_fresh(NOW + 301, NOW, 300)
    assert ahead.value.code == "from-the-future"
    with pytest.raises(Refused) as behind:
        check_fresh(NOW - 301, NOW, 300)
    assert behind.value.code == "stale"
