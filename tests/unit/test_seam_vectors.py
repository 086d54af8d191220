"""The seam's golden vectors: every group muretai implements, accept and reject halves."""

from __future__ import annotations

from typing import Any

import pytest

from muretai_cli.errors import MuretaiError
from muretai_cli.seam import (
    SigningKey,
    canonical_bytes,
    canonical_from_json,
    card_envelope_payload,
    did_from_public,
    listen_token_payload,
    open_box,
    public_from_did,
    relay_send_payload,
    sign_listen_token,
    sign_relay_send,
    signing_payload,
    verify_card_envelope,
    verify_envelope,
    verify_listen_token,
    verify_relay_send,
)
from muretai_cli.urls import parse_base_url
from tests.repo_files import REQUIRE_VECTORS, a_case, vector_cases, vector_file


@pytest.mark.parametrize("case", vector_cases("canonical"))
def test_canonical(case: dict[str, Any] | None) -> None:
    case = a_case(case)
    assert canonical_bytes(case["payload"]) == case["canonical"].encode(), case["name"]


@pytest.mark.parametrize("case", vector_cases("did"))
def test_did_round_trip(case: dict[str, Any] | None) -> None:
    case = a_case(case)
    curve, public = public_from_did(case["did"])
    assert public.hex() == case["publicHex"]
    assert did_from_public(public, curve) == case["did"]


@pytest.mark.parametrize("case", vector_cases("envelope"))
def test_envelope_signing_payload(case: dict[str, Any] | None) -> None:
    case = a_case(case)
    assert signing_payload(case) == case["signingPayload"].encode(), case["name"]


def test_accept_encoding(wire_vectors: dict[str, Any]) -> None:
    # The refuse half is test_encoding_refusals_name_their_category: each case by its code.
    group = wire_vectors["reject"]["encoding"]
    assert group["accept"]
    for case in group["accept"]:
        assert canonical_from_json(bytes.fromhex(case["documentHex"])) == \
            case["canonical"].encode(), case["name"]


@pytest.mark.parametrize("case", vector_cases("cardpub"))
def test_cardpub(case: dict[str, Any] | None) -> None:
    case = a_case(case)
    assert card_envelope_payload(case["card"], case["ts"]) == case["envelopePayload"].encode()
    env = {"v": 1, "typ": "agentcard", "card": case["card"], "ts": case["ts"],
           "sig": case["sig"]}
    assert verify_card_envelope(env, expected_did=case["card"]["did"]) == case["card"]


# Each reject.message case must be refused for its own reason: a case refused for another
# reason would still pass if the check it exists for were deleted.
EXPECTED_MESSAGE_CODES = {
    "from-not-signer": "bad-signature",
    "bad-signature": "small-order-key",  # all-zero sig: R = 0x00…, a small-order point
    "tampered-text": "bad-signature",
    "tampered-timestamp": "bad-signature",
    "missing-sig": "missing-sig",
    "wrong-recipient": "wrong-recipient",
    "small-order-signer": "small-order-key",
    "sig-not-canonical-base64": "sig-not-canonical-base64",
    "wire-names-its-own-recipient": "wrong-recipient",
}


def test_reject_message_reasons(wire_vectors: dict[str, Any]) -> None:
    cases = wire_vectors["reject"]["message"]
    assert {c["name"] for c in cases} == set(EXPECTED_MESSAGE_CODES)
    for case in cases:
        assert case["mustReject"] is True
        to = None if case.get("verifierNamesNoRecipient") else case.get("recipientDid",
                                                                         case["input"]["to"])
        with pytest.raises(MuretaiError) as info:
            verify_envelope(case["input"], to_did=to)  # type: ignore[arg-type]
        assert info.value.code == EXPECTED_MESSAGE_CODES[case["name"]], case["name"]


def test_reject_message_controls_verify(wire_vectors: dict[str, Any]) -> None:
    """The cases are one honest message with one thing changed: the honest one verifies."""
    cases = {c["name"]: c for c in wire_vectors["reject"]["message"]}
    honest = dict(cases["wire-names-its-own-recipient"]["input"])
    honest.pop("recipientDid")
    assert verify_envelope(honest, to_did=honest["to"])["text"] == "pay the invoice"
    misdirected = cases["wrong-recipient"]["input"]
    assert verify_envelope(misdirected, to_did=misdirected["to"])


@pytest.mark.parametrize("case", vector_cases("cardpub"))
def test_cardpub_refuses_a_caller_asking_for_another_did(wire_vectors: dict[str, Any],
                                                          case: dict[str, Any] | None) -> None:
    case = a_case(case)
    other = wire_vectors["did"][3]["did"]
    env = {"v": 1, "typ": "agentcard", "card": case["card"], "ts": case["ts"],
           "sig": case["sig"]}
    assert other != case["card"]["did"]
    with pytest.raises(MuretaiError) as info:
        verify_card_envelope(env, expected_did=other)
    assert info.value.code == "did-mismatch"


@pytest.mark.parametrize("case", vector_cases("reject", "encoding", "refuse"))
def test_encoding_refusals_name_their_category(case: dict[str, Any] | None) -> None:
    case = a_case(case)
    with pytest.raises(MuretaiError) as info:
        canonical_from_json(bytes.fromhex(case["documentHex"]))
    assert info.value.code == case["category"], case["name"]


@pytest.mark.parametrize("case", vector_cases("cryptobox", "open"))
def test_cryptobox_open(wire_vectors: dict[str, Any], case: dict[str, Any] | None) -> None:
    case = a_case(case)
    group = wire_vectors["cryptobox"]
    me = SigningKey(bytes.fromhex(group["recipientSeed"]))
    assert me.enc_pub == group["recipientEncPub"]
    assert SigningKey(bytes.fromhex(group["senderSeed"])).enc_pub == group["senderEncPub"]
    plain = open_box(me, group["senderEncPub"], case["blob"], ad=bytes.fromhex(case["adHex"]))
    assert plain == bytes.fromhex(case["plaintextHex"]), case["name"]


def test_cryptobox_must_not_open(wire_vectors: dict[str, Any]) -> None:
    group = wire_vectors["cryptobox"]
    me = SigningKey(bytes.fromhex(group["recipientSeed"]))
    assert group["mustNotOpen"]
    for case in group["mustNotOpen"]:
        assert open_box(me, group["senderEncPub"], case["blob"],
                        ad=bytes.fromhex(case["adHex"])) is None, case["name"]


@pytest.mark.parametrize("case", vector_cases("relay", "send"))
def test_relay_send(wire_vectors: dict[str, Any], case: dict[str, Any] | None) -> None:
    case = a_case(case)
    signer = SigningKey(bytes.fromhex(wire_vectors["relay"]["seedA"]))
    payload = relay_send_payload(case["to"], case["from"], case["id"], case["blob"])
    assert payload == case["sendSigMsg"].encode(), case["name"]
    assert signer.did == case["from"]
    assert sign_relay_send(signer, to=case["to"], deposit_id=case["id"],
                           blob=case["blob"]) == case["sig"]
    verify_relay_send(to=case["to"], sender=case["from"], deposit_id=case["id"],
                      blob=case["blob"], sig=case["sig"])


@pytest.mark.parametrize("case", vector_cases("relay", "listen"))
def test_relay_listen(wire_vectors: dict[str, Any], case: dict[str, Any] | None) -> None:
    case = a_case(case)
    signer = SigningKey(bytes.fromhex(wire_vectors["relay"]["seedA"]))
    origin = parse_base_url(case["relayUrl"], require_https=False).origin
    assert origin == case["origin"], case["name"]
    assert listen_token_payload(case["did"], case["minute"], origin) == \
        case["listenTokenMsg"].encode()
    assert sign_listen_token(signer, minute=case["minute"], origin=origin) == case["token"]
    verify_listen_token(did=case["did"], minute=case["minute"], token=case["token"],
                        origin=origin)
    with pytest.raises(MuretaiError) as info:
        verify_listen_token(did=case["did"], minute=case["minute"] + 1,
                            token=case["token"], origin=origin)
    assert info.value.code == "bad-signature", case["name"]


def test_a_missing_vector_file_fails_when_vectors_are_required(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_VECTORS, "1")
    with pytest.raises(pytest.fail.Exception, match="MURETAI_REQUIRE_VECTORS=1"):
        vector_file("no_such_vectors.json")
    monkeypatch.delenv(REQUIRE_VECTORS)
    with pytest.raises(pytest.skip.Exception):
        vector_file("no_such_vectors.json")
