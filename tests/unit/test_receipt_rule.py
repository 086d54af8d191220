"""Issue 18 §1: receipts are not answers.

A door's inline answer is its automatic receipt when, and only when, its SIGNED messageId
is ``receipt_message_id(me, sent messageId)``; every other verified answer is a reply: an
owner's or ``--on-message`` answer, the reference Agent Entry's responder (a random
messageId, bound by the conversation), and an older muretai door's receipt (no marker).
Each case removes one piece of the rule.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from muretai_cli.artifacts.message import (
    REPLY_BINDING,
    REPLY_BINDINGS,
    receipt_message_id,
    reply_message_id,
    signed_message,
)
from muretai_cli.seam import SigningKey
from muretai_cli.visit.dm import ReplyCheck, check_reply, sent_of

DOOR = SigningKey(b"\x21" * 32)
ME = SigningKey(b"\x22" * 32).did
SENT = {"messageId": "m-1", "contextId": "c-1"}


def _answer(mid: str | None, *, key: SigningKey = DOOR, text: str = "ok") -> dict[str, Any]:
    return signed_message(key, to=ME, text=text, now=int(time.time()), context_id="c-1",
                          role="agent", reply_to="m-1", message_id=mid)


def _judge(message: dict[str, Any], *, promised: bool = True) -> ReplyCheck:
    return check_reply({"result": message}, door_did=DOOR.did, me=ME,
                       sent=sent_of(ME, SENT, promised=promised), now=int(time.time()))


def test_receipt_id_is_the_documented_digest_and_not_the_replys() -> None:
    digest = hashlib.sha256(b"muretai-receipt-v1\x00did:key:z6MkA\x00m-1").hexdigest()
    assert receipt_message_id("did:key:z6MkA", "m-1") == "d-" + digest[:32]
    assert receipt_message_id("did:key:z6MkA", "m-1") != reply_message_id("did:key:z6MkA", "m-1")
    assert receipt_message_id("did:key:z6MkA", "m-2") != receipt_message_id("did:key:z6MkA", "m-1")


def test_a_signed_receipt_is_a_receipt_bound_to_the_message() -> None:
    check = _judge(_answer(receipt_message_id(ME, "m-1"), text="accepted: delivered"))
    assert check.verdict.ok and check.receipt and check.binding == "message"
    # without the card's promise too: the derived id is signed, and proves the same
    check = _judge(_answer(receipt_message_id(ME, "m-1")), promised=False)
    assert check.verdict.ok and check.receipt and check.binding == "message"


def test_an_answer_is_a_reply() -> None:
    check = _judge(_answer(reply_message_id(ME, "m-1"), text="you said: hi"))
    assert check.verdict.ok and not check.receipt and check.binding == "message"


def test_the_reference_doors_answer_is_a_reply() -> None:
    # Agent Entry signs its responder's answer under a fresh random messageId, replyTo and
    # the conversation's contextId; its card makes no muretai promise.
    check = _judge(_answer(None, text="Thanks - a human will follow up."), promised=False)
    assert check.verdict.ok and not check.receipt and check.binding == "conversation"


def test_an_older_muretai_doors_receipt_carries_no_marker_and_reads_as_a_reply() -> None:
    check = _judge(_answer(reply_message_id(ME, "m-1"), text="accepted: delivered to x's "
                                                            "inbox"))
    assert check.verdict.ok and not check.receipt


def test_tampering_cannot_turn_a_receipt_into_a_reply() -> None:
    receipt = _answer(receipt_message_id(ME, "m-1"))
    receipt["messageId"] = reply_message_id(ME, "m-1")  # the reply's id, unsigned
    check = _judge(receipt)
    assert not check.verdict.ok and not check.receipt
    assert "reply-bad-signature" in [r.code for r in check.verdict.errors]


def test_a_receipt_id_signed_by_another_key_is_no_receipt() -> None:
    check = _judge(_answer(receipt_message_id(ME, "m-1"), key=SigningKey(b"\x23" * 32)))
    assert not check.verdict.ok and not check.receipt


def test_a_receipt_for_another_message_is_not_bound() -> None:
    check = _judge(_answer(receipt_message_id(ME, "m-2")))
    assert not check.verdict.ok and not check.receipt
    assert "reply-not-bound" in [r.code for r in check.verdict.errors]


def test_a_visitor_reads_both_promises() -> None:
    assert REPLY_BINDING in REPLY_BINDINGS and "messageId-sha256-v1" in REPLY_BINDINGS
