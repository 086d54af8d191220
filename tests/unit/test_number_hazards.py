"""Number hazards (seam §1, timestampNote, numberHazards): a verifier keeps verifying whatever
timestamp type arrived, over its canonical bytes as received. Where the timestamp is a float
whose spelling differs between languages and the signature does not verify over Python's
spelling, the answer is `cannot-verify` (its own reason; at a door -32006 with data.reason),
never "bad signature". Nothing muretai signs, stores or prints carries a float."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.artifacts.message import build_message, build_message_send
from muretai_cli.errors import Refused
from muretai_cli.inbox.store import IdentityStore
from muretai_cli.seam import (
    SigningKey,
    canonical_bytes,
    is_number_hazard,
    seal_box,
    sign_envelope,
    verify_envelope,
)
from muretai_cli.visit.turn import TurnCheck
from tests.cli_helpers import new_identity, run_json
from tests.door_helpers import code_of, local_door
from tests.relay_helpers import OneAnswer

NOW = int(time.time())


def _floats(value: Any) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    return []


def test_every_float_the_vectors_list_is_a_hazard_and_the_contrast_case_is_not(
        wire_vectors: dict[str, Any]) -> None:
    hazards = [f for c in wire_vectors["numberHazards"] for f in _floats(c["payload"])]
    assert len(hazards) >= 6 and all(is_number_hazard(f) for f in hazards), hazards
    agree = next(c for c in wire_vectors["canonical"] if c["name"] == "fractional-float-agrees")
    assert _floats(agree["payload"]) and not any(map(is_number_hazard,
                                                     _floats(agree["payload"])))
    assert not is_number_hazard(NOW) and not is_number_hazard("1.0")


def signed_over(key: SigningKey, to: str, *, wire: Any, signed: Any,
                text: str = "pay the invoice") -> dict[str, Any]:
    """Six fields carrying ``wire`` as the timestamp, signed over the bytes of ``signed``
    (as a signer in another language, or a tamperer, would have made them)."""
    fields = {"contextId": None, "from": key.did, "messageId": f"m-{time.time_ns()}",
              "text": text, "timestamp": signed, "to": to}
    return {**fields, "timestamp": wire, "sig": key.sign(canonical_bytes(fields))}


# (case, timestamp on the wire, timestamp the signature covers, verdict of the envelope)
CASES = [
    ("fractional-float-as-signed", NOW + 0.5, NOW + 0.5, None),
    ("integral-float-as-signed-by-python", float(NOW), float(NOW), None),
    ("integral-float-signed-as-an-int", float(NOW), NOW, "cannot-verify"),
    ("exponent-float-signed-otherwise", 1e16, 10**16, "cannot-verify"),
    ("fractional-float-tampered", NOW + 0.5, NOW, "bad-signature"),
    ("int-tampered", NOW + 1, NOW, "bad-signature"),
    ("string-as-signed", str(NOW), str(NOW), None),
]


@pytest.mark.parametrize(("case", "wire", "signed", "code"), CASES, ids=[c[0] for c in CASES])
def test_the_envelope_is_verified_as_received(case: str, wire: Any, signed: Any,
                                              code: str | None) -> None:
    alice, bob = SigningKey.generate(), SigningKey.generate()
    env = signed_over(alice, bob.did, wire=wire, signed=signed)
    if code is None:
        assert verify_envelope(env, to_did=bob.did)["timestamp"] == wire
        return
    with pytest.raises(Refused) as info:
        verify_envelope(env, to_did=bob.did)
    assert info.value.code == code


def test_the_signer_never_emits_a_float() -> None:
    with pytest.raises(Refused) as info:
        sign_envelope(SigningKey.generate(), to=SigningKey.generate().did, text="x",
                      timestamp=float(NOW))  # type: ignore[arg-type]
    assert info.value.code == "float-in-payload"


def _request(env: dict[str, Any]) -> dict[str, Any]:
    return build_message_send(build_message(env))


# (case, wire, signed, JSON-RPC code, data.reason) at a live door
DOOR_CASES = [
    ("integral-float-as-signed-by-python", float(NOW), float(NOW), None, None),
    ("fractional-float-as-signed", NOW + 0.5, NOW + 0.5, None, None),
    ("integral-float-signed-as-an-int", float(NOW), NOW, -32006, "cannot-verify"),
    ("fractional-float-tampered", NOW + 0.5, NOW, -32001, "bad-signature"),
    ("string-as-signed", str(NOW), str(NOW), -32002, "timestamp-not-a-number"),
]


@pytest.mark.parametrize(("case", "wire", "signed", "code", "reason"), DOOR_CASES,
                         ids=[c[0] for c in DOOR_CASES])
def test_at_a_door(case: str, wire: Any, signed: Any, code: int | None,
                   reason: str | None) -> None:
    alice = SigningKey.generate()
    with local_door("open") as door:
        doc = door.rpc(_request(signed_over(alice, door.did, wire=wire, signed=signed)))
        if code is None:
            assert "result" in doc, doc
            store = door.store()
            try:
                (kept,) = store.inbox(None)
            finally:
                store.close()
            assert type(kept["timestamp"]) is int and kept["timestamp"] == int(wire)
        else:
            assert code_of(doc) == code and doc["error"]["data"] == {"reason": reason}, doc


def test_on_the_relay_drain_a_hazard_is_refused_as_cannot_verify(tmp_path: Path) -> None:
    from muretai_cli.visit.relay import Waiting

    bob, alice = SigningKey.generate(), SigningKey.generate()
    good = _request(signed_over(alice, bob.did, wire=float(NOW), signed=float(NOW)))
    hazard = _request(signed_over(alice, bob.did, wire=float(NOW), signed=NOW))
    items = [Waiting(f"d{i}", alice.did, alice.enc_pub,
                     seal_box(alice, bob.enc_pub, canonical_bytes(r), ad=b""), NOW)
             for i, r in enumerate((good, hazard))]
    store = IdentityStore(tmp_path / "bob.sqlite3")
    try:
        counts = TurnCheck(bob, store, OneAnswer(items), "open").step(0).counts  # type: ignore[arg-type]
        assert counts == {"accepted": 1, "refused": 1}
        shown = {i["outcome"]: i for i in store.unshown()}
        assert shown["refused"]["reason"]["code"] == "cannot-verify"
        assert type(shown["accepted"]["message"]["timestamp"]) is int
    finally:
        store.close()


def test_verify_message_accepts_what_the_references_accept_and_prints_no_float() -> None:
    bob = new_identity("bob")
    alice = SigningKey.generate()
    python_signed = _request(signed_over(alice, bob, wire=float(NOW), signed=float(NOW)))
    code, doc = run_json("verify", "message", "-", "--to", bob,
                         input=json.dumps(python_signed))
    assert code == 0, doc
    result = doc["results"][0]
    assert result["timestamp"] == NOW and type(result["timestamp"]) is int
    assert [r["code"] for r in result["reasons"]] == ["float-timestamp"]
    other = _request(signed_over(alice, bob, wire=float(NOW), signed=NOW))
    code, doc = run_json("verify", "message", "-", "--to", bob, input=json.dumps(other))
    assert code == 1 and [r["code"] for r in doc["results"][0]["reasons"]] == ["cannot-verify"]
