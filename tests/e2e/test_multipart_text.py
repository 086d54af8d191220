"""A message of several text parts is signed over the parts joined with "\\n" (agent-seam's
``Message.from_a2a``, agent-entry): the same two-part message, signed over "a\\nb", is
accepted at the door, on the relay drain and offline; signed over "ab" it is refused as a bad
signature everywhere. Each place derives the text through ``text_of_parts``; a join that
drifts from the references fails both halves of the table."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.artifacts.message import build_message, build_message_send, envelope_of
from muretai_cli.inbox.store import IdentityStore
from muretai_cli.seam import SigningKey, canonical_bytes, seal_box, sign_envelope
from muretai_cli.visit.offline import check_message
from muretai_cli.visit.relay import Waiting
from muretai_cli.visit.turn import TurnCheck
from tests.door_helpers import code_of, local_door
from tests.relay_helpers import OneAnswer

PARTS = ["a", "b"]
# (case, the text the signer signed, accepted?)
CASES = [("joined-with-newline", "a\nb", True), ("joined-with-nothing", "ab", False),
         ("joined-with-space", "a b", False)]


def two_part_request(sender: SigningKey, to: str, signed_text: str) -> dict[str, Any]:
    env = sign_envelope(sender, to=to, text=signed_text, timestamp=int(time.time()))
    message = build_message(env)
    message["parts"] = [{"kind": "text", "text": t} for t in PARTS]
    return build_message_send(message)


def test_the_signed_text_of_parts_is_joined_with_a_newline() -> None:
    sender, me = SigningKey.generate(), SigningKey.generate()
    message = two_part_request(sender, me.did, "a\nb")["params"]["message"]
    assert envelope_of(message)["text"] == "a\nb"


@pytest.mark.parametrize(("case", "signed", "accepted"), CASES, ids=[c[0] for c in CASES])
def test_offline_verify(case: str, signed: str, accepted: bool) -> None:
    sender, me = SigningKey.generate(), SigningKey.generate()
    verdict = check_message(two_part_request(sender, me.did, signed), to_did=me.did,
                            now=int(time.time()))
    assert verdict.ok is accepted, verdict
    if not accepted:
        assert [r.code for r in verdict.reasons] == ["bad-signature"]


@pytest.mark.parametrize(("case", "signed", "accepted"), CASES, ids=[c[0] for c in CASES])
def test_at_a_door(case: str, signed: str, accepted: bool) -> None:
    sender = SigningKey.generate()
    with local_door("open") as door:
        doc = door.rpc(two_part_request(sender, door.did, signed))
        if accepted:
            assert "result" in doc, doc
            store = door.store()
            try:
                assert [m["text"] for m in store.inbox(None)] == ["a\nb"]
            finally:
                store.close()
        else:
            assert code_of(doc) == -32001 and doc["error"]["data"]["reason"] == "bad-signature"


@pytest.mark.parametrize(("case", "signed", "accepted"), CASES, ids=[c[0] for c in CASES])
def test_on_the_relay_drain(tmp_path: Path, case: str, signed: str, accepted: bool) -> None:
    bob, sender = SigningKey.generate(), SigningKey.generate()
    request = two_part_request(sender, bob.did, signed)
    blob = seal_box(sender, bob.enc_pub, canonical_bytes(request), ad=b"")
    relay = OneAnswer([Waiting("d1", sender.did, sender.enc_pub, blob, int(time.time()))])
    store = IdentityStore(tmp_path / "bob.sqlite3")
    try:
        counts = TurnCheck(bob, store, relay, "open").step(0).counts  # type: ignore[arg-type]
        if accepted:
            assert counts == {"accepted": 1}
            assert [i["message"]["text"] for i in store.unshown()] == ["a\nb"]
        else:
            assert counts == {"refused": 1}
            assert [(i["outcome"], i["reason"]["code"]) for i in store.unshown()] == [
                ("refused", "bad-signature")]
    finally:
        store.close()


def test_two_empty_parts_say_nothing() -> None:
    sender = SigningKey.generate()
    with local_door("open") as door:
        req = two_part_request(sender, door.did, "\n")
        req["params"]["message"]["parts"] = [{"kind": "text", "text": ""}] * 2
        doc = door.rpc(req)
        assert code_of(doc) == -32600 and doc["error"]["data"]["reason"] == "empty-text"
