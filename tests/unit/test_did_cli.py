"""``muretai did resolve``: every did:key spelled, weak keys warned about, bad DIDs exit 1."""

from __future__ import annotations

import json
from typing import Any

import base58
import pytest
from typer.testing import CliRunner, Result

from muretai_cli.artifacts.diddoc import describe_did
from muretai_cli.cli import app
from muretai_cli.seam import SMALL_ORDER_ENCODINGS, SigningKey, did_from_public
from tests.repo_files import cases

HONEST = SigningKey(bytes(range(32))).did


def run(*args: str) -> Result:
    return CliRunner().invoke(app, ["did", "resolve", *args])


def test_honest_did_resolves_without_warnings() -> None:
    result = run(HONEST)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    document = json.loads(result.stdout)
    assert document["id"] == HONEST
    vm = document["verificationMethod"]
    assert vm[0] == {"id": f"{HONEST}#{HONEST[8:]}", "type": "Multikey", "controller": HONEST,
                     "publicKeyMultibase": HONEST[8:]}
    assert vm[1]["type"] == "Multikey" and vm[1]["publicKeyMultibase"].startswith("z6LS")
    assert document["keyAgreement"] == [vm[1]["id"]]
    for relation in ("authentication", "assertionMethod", "capabilityDelegation",
                     "capabilityInvocation"):
        assert document[relation] == [vm[0]["id"]]


def test_json_first_key_is_ok() -> None:
    result = run(HONEST, "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert next(iter(doc)) == "ok" and doc["ok"] is True
    assert doc["did"] == HONEST and doc["curve"] == "ed25519" and doc["warnings"] == []
    assert doc["publicKeyHex"] == SigningKey(bytes(range(32))).public_bytes.hex()


def test_every_did_vector_resolves(wire_vectors: dict[str, Any]) -> None:
    for case in cases(wire_vectors["did"], "did"):
        result = run(case["did"], "--json")
        assert result.exit_code == 0, (case, result.output)
        doc = json.loads(result.stdout)
        assert doc["publicKeyHex"] == case["publicHex"]
        assert doc["curve"] == case["curve"]
        text = run(case["did"])
        assert text.exit_code == 0
        assert json.loads(text.stdout)["id"] == case["did"]


def test_all_zero_key_resolves_with_a_warning(wire_vectors: dict[str, Any]) -> None:
    zero = next(c["did"] for c in wire_vectors["did"] if c["publicHex"] == "00" * 32)
    result = run(zero)
    assert result.exit_code == 0
    assert "warning: small-order-key" in result.stderr
    assert "never verify" in result.stderr
    assert json.loads(result.stdout)["id"] == zero  # stdout is only the document


def test_all_ones_key_resolves_with_a_warning(wire_vectors: dict[str, Any]) -> None:
    ones = next(c["did"] for c in wire_vectors["did"] if c["publicHex"] == "ff" * 32)
    result = run(ones)
    assert result.exit_code == 0
    assert "warning: not-a-curve-point" in result.stderr


@pytest.mark.parametrize("enc", sorted(SMALL_ORDER_ENCODINGS), ids=lambda e: e.hex()[:6] + (
    "-neg" if e[31] & 0x80 else ""))
def test_every_small_order_key_is_warned_about(enc: bytes) -> None:
    result = run(did_from_public(enc))
    assert result.exit_code == 0
    assert "small-order-key" in result.stderr


def test_off_curve_key_is_warned_about() -> None:
    """y = 2 has no x on edwards25519 (x² would be a non-square)."""
    off = did_from_public((2).to_bytes(32, "little"))
    assert describe_did(off)["warnings"][0].startswith("not-a-curve-point")
    assert describe_did(HONEST)["warnings"] == []


def test_p256_warns(wire_vectors: dict[str, Any]) -> None:
    p256 = next(c["did"] for c in wire_vectors["did"] if c["curve"] == "p256")
    result = run(p256)
    assert result.exit_code == 0
    assert "warning: not-ed25519" in result.stderr
    document = json.loads(result.stdout)
    assert "keyAgreement" not in document and len(document["verificationMethod"]) == 1
    doc = json.loads(run(p256, "--json").stdout)
    assert doc["curve"] == "p256" and doc["warnings"]


@pytest.mark.parametrize(("did", "says"), [
    ("did:web:example.com", "not a did:key"),
    ("did:key:z" + "1" * 10, "multicodec"),
    ("did:key:z6LSbysY2xFMRpGMhb7tFTLMpeuPRaqaWM1yECx2AtzE3KCc", "multicodec prefix ec01"),
    ("did:key:z" + base58.b58encode(b"\xed\x01" + bytes(31)).decode(), "this one to 33"),
    (HONEST + "0", "not base58btc"),
    ("did:key:z" + "2" * 513, "at most 512"),
])
def test_malformed_did_exits_2_with_the_reason(did: str, says: str) -> None:
    result = run(did)
    assert result.exit_code == 2, result.output   # unreadable input, as `op dm` says it
    assert result.stdout == ""
    assert "bad-did" in result.stderr and says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    doc = json.loads(run(did, "--json").stdout)
    assert next(iter(doc)) == "ok" and doc["ok"] is False and doc["error"] == "bad-did"


def test_hundred_thousand_character_did_is_quick_and_clean(b58_decoded: list[int]) -> None:
    did = "did:key:z" + "6Mk" * 33_334
    result = run(did)
    assert b58_decoded == [], "refused by its length, before any decoding"
    assert result.exit_code == 2
    assert "at most 512" in result.stderr
    assert len(result.stderr) < 400  # the DID is not echoed back


def test_terminal_controls_in_a_did_do_not_reach_the_terminal() -> None:
    result = run("did:key:z\x1b[31m")
    assert result.exit_code == 2
    assert "\x1b" not in result.output
