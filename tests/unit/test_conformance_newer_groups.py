"""`muretai conformance` runs agent-seam's newer groups `reject.did` and `reject.cardpub`,
built here from their own recipe (one rule broken per case, each checked against its control),
and reports them as missing from a vectors file that lacks them, never as not implemented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import base58
import pytest

from muretai_cli.conformance import run_conformance
from muretai_cli.seam import SigningKey, card_envelope_payload, sign_card_envelope
from tests.cli_helpers import run_json

TS = 1784273681


def _did_of(raw: bytes) -> str:
    return "did:key:z" + base58.b58encode(raw).decode()


def reject_did() -> list[dict[str, Any]]:
    key = bytes(range(32))
    specs = [("x25519-multicodec", "wrong-multicodec", b"\xec\x01" + key),
             ("ed25519-prefix-31-byte-key", "wrong-length", b"\xed\x01" + key[:31]),
             ("ed25519-prefix-33-byte-key", "wrong-length", b"\xed\x01" + key + b"\x00")]
    return [{"name": n, "category": c, "mustReject": True, "did": _did_of(raw),
             "decodedHex": raw.hex()} for n, c, raw in specs]


def genuine_envelope() -> dict[str, Any]:
    seed = SigningKey(bytes([13] * 32))
    return sign_card_envelope(seed, {"did": seed.did, "name": "Node",
                                     "url": "http://127.0.0.1:8001/"}, TS)


def reject_cardpub() -> list[dict[str, Any]]:
    genuine = genuine_envelope()
    card, did = genuine["card"], genuine["card"]["did"]
    other = SigningKey(bytes([14] * 32))
    flipped = ("B" if genuine["sig"][0] != "B" else "C") + genuine["sig"][1:]
    cases = [("sig-flipped-base64-char", "bad-signature", {**genuine, "sig": flipped}),
             ("signed-by-another-key", "foreign-signer",
              {**genuine, "sig": other.sign(card_envelope_payload(card, TS))}),
             ("tampered-card-body", "tampered-payload",
              {**genuine, "card": {**card, "url": "http://attacker.example/"}})]
    return [{"name": n, "category": c, "mustReject": True, "expectedDid": did, "envelope": e}
            for n, c, e in cases]


def vectors(**reject: Any) -> dict[str, Any]:
    return {"protocolVersion": "0.2", "canonical": [
        {"name": "sorted", "payload": {"b": 1, "a": 2}, "canonical": '{"a":2,"b":1}'}],
        "reject": reject}


def statuses(doc: dict[str, Any]) -> dict[str, tuple[str, int, str]]:
    return {r.group: (r.status, r.cases, r.reason) for r in run_conformance(doc)}


def test_both_groups_run_and_pass_from_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "wire.json"
    path.write_text(json.dumps(vectors(did=reject_did(), cardpub=reject_cardpub())))
    code, doc = run_json("conformance", str(path))
    assert code == 0, doc
    got = {g["group"]: (g["status"], g["cases"]) for g in doc["groups"]}
    assert got["reject.did"] == ("passed", 3) and got["reject.cardpub"] == ("passed", 3)
    assert got["canonical"] == ("passed", 1)  # the rest of this small file is missing


def test_a_file_without_them_reports_them_missing_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "older.json"
    path.write_text(json.dumps(vectors()))
    code, doc = run_json("conformance", str(path))
    assert code == 0  # skipped is not failed
    got = {g["group"]: g for g in doc["groups"]}
    for group in ("reject.did", "reject.cardpub"):
        assert got[group]["status"] == "skipped", group
        assert got[group]["reason"].startswith("missing from the file"), got[group]
        assert "not implemented" not in got[group]["reason"]


def test_a_fragment_without_protocol_version_lists_only_what_it_holds() -> None:
    doc = vectors(did=reject_did())
    del doc["protocolVersion"]
    assert set(statuses(doc)) == {"canonical", "reject.did"}


def _break(cases: list[dict[str, Any]], name: str, **change: Any) -> list[dict[str, Any]]:
    return [{**c, **change} if c["name"] == name else c for c in cases]


@pytest.mark.parametrize(("group", "cases", "failing"), [
    # the genuine envelope presented as a refusal: a runner that refuses nothing is red
    ("cardpub", _break(reject_cardpub(), "tampered-card-body", envelope=genuine_envelope()),
     "tampered-card-body"),
    # the caller's expectedDid is read from the case: another DID would be refused anyway
    # (did-mismatch), which is not the signature refusal the case stands for
    ("cardpub", _break(reject_cardpub(), "signed-by-another-key",
                       expectedDid=SigningKey(bytes([15] * 32)).did), "signed-by-another-key"),
    # a DID that decodes to an honest key: the decoder accepts it, the case fails
    ("did", _break(reject_did(), "ed25519-prefix-33-byte-key",
                   did=_did_of(b"\xed\x01" + bytes(range(32))),
                   decodedHex=(b"\xed\x01" + bytes(range(32))).hex()),
     "ed25519-prefix-33-byte-key"),
    # the control: decodedHex must be what the DID decodes to
    ("did", _break(reject_did(), "x25519-multicodec", decodedHex="ec01" + "00" * 32),
     "x25519-multicodec"),
    # the control: the bytes must break the case's own rule (x25519 bytes are not wrong-length)
    ("did", _break(reject_did(), "x25519-multicodec", category="wrong-length"),
     "x25519-multicodec"),
])
def test_a_case_that_does_not_refuse_for_its_own_reason_fails(
        group: str, cases: list[dict[str, Any]], failing: str) -> None:
    (result,) = [r for r in run_conformance(vectors(**{group: cases}))
                 if r.group == f"reject.{group}"]
    assert result.status == "failed" and result.failures == [failing], result


def test_a_malformed_group_fails_by_name() -> None:
    got = statuses(vectors(did="nope", cardpub=[{"name": "x"}]))
    assert got["reject.did"][0] == "failed" and got["reject.cardpub"][0] == "failed"
