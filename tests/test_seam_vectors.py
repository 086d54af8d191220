"""The seam's golden vectors: every group muretai implements, accept and reject halves."""

from __future__ import annotations

from typing import Any

import pytest

from muretai_cli.errors import MuretaiError
from muretai_cli.seam import (
    canonical_bytes,
    canonical_from_json,
    card_envelope_payload,
    did_from_public,
    public_from_did,
    signing_payload,
    verify_card_envelope,
    verify_envelope,
)


def test_canonical(wire_vectors: dict[str, Any]) -> None:
    for case in wire_vectors["canonical"]:
        assert canonical_bytes(case["payload"]) == case["canonical"].encode(), case["name"]


def test_did_round_trip(wire_vectors: dict[str, Any]) -> None:
    for case in wire_vectors["did"]:
        curve, public = public_from_did(case["did"])
        assert public.hex() == case["publicHex"]
        assert did_from_public(public, curve) == case["did"]


def test_envelope_signing_payload(wire_vectors: dict[str, Any]) -> None:
    for case in wire_vectors["envelope"]:
        assert signing_payload(case) == case["signingPayload"].encode(), case["name"]


def test_reject_message(wire_vectors: dict[str, Any]) -> None:
    for case in wire_vectors["reject"]["message"]:
        to = None if case.get("verifierNamesNoRecipient") else case.get("recipientDid",
                                                                         case["input"]["to"])
        with pytest.raises(MuretaiError):
            verify_envelope(case["input"], to_did=to)  # type: ignore[arg-type]


def test_reject_encoding(wire_vectors: dict[str, Any]) -> None:
    group = wire_vectors["reject"]["encoding"]
    for case in group["refuse"]:
        with pytest.raises(MuretaiError):
            canonical_from_json(bytes.fromhex(case["documentHex"]))
    for case in group["accept"]:
        assert canonical_from_json(bytes.fromhex(case["documentHex"])) == \
            case["canonical"].encode(), case["name"]


def test_cardpub(wire_vectors: dict[str, Any]) -> None:
    for case in wire_vectors["cardpub"]:
        assert card_envelope_payload(case["card"], case["ts"]) == case["envelopePayload"].encode()
        env = {"v": 1, "typ": "agentcard", "card": case["card"], "ts": case["ts"],
               "sig": case["sig"]}
        assert verify_card_envelope(env, expected_did=case["card"]["did"]) == case["card"]
