"""The receiving pipeline (``inbox/arrival.py``), stage by stage, with no transport.

Each case breaks exactly one stage (and is otherwise a good message), so a stage removed or
moved makes its case pass or fail for another reason. The door's window and a relay's are
the same code with different numbers.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from muretai_cli.artifacts.message import signed_message
from muretai_cli.inbox.arrival import DOOR_WINDOW, Arrival, Window, read_message
from muretai_cli.inbox.ladder import Code, RpcError
from muretai_cli.inbox.relayed import RELAYED_WINDOW
from muretai_cli.seam import MESSAGE_WINDOW, SigningKey

NOW = 1_800_000_000
ME = SigningKey(bytes([7]) * 32)
ALICE = SigningKey(bytes([8]) * 32)
OTHER = SigningKey(bytes([9]) * 32)


def params(*, to: str = ME.did, ts: int = NOW, text: str = "hi", key: SigningKey = ALICE
           ) -> dict[str, Any]:
    return {"message": signed_message(key, to=to, text=text, now=ts, context_id="c-1",
                                      metadata={"relay": "https://relay.example/r",
                                                "replyTo": "m-mine"})}


def _meta(p: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = p["message"]["metadata"]
    return meta


def _tampered(p: dict[str, Any]) -> dict[str, Any]:
    p["message"]["parts"][0]["text"] = "changed after signing"
    return p


def _no_envelope(p: dict[str, Any]) -> dict[str, Any]:
    for key in ("from", "to", "sig"):
        _meta(p).pop(key)
    return p


# name -> (how the good message is broken, the stage's code, its reason)
CASES: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], Code, str]] = {
    "shape": (lambda p: {**p, "message": {**p["message"], "role": "agent"}},
              Code.INVALID_REQUEST, "role-not-user"),
    "size": (lambda p: _tampered_text(p, "x" * (64 * 1024 + 1)),
             Code.TEXT_TOO_LARGE, "text-too-large"),
    "keyless walk-in": (_no_envelope, Code.SIGNATURE, "no-envelope"),
    "six fields": (lambda p: {**p, "message": {**p["message"], "metadata": {
        **_meta(p), "timestamp": [NOW]}}}, Code.SIGNATURE, "malformed-field"),
    # a float is verified as received (issue 21.3): signed as an int, it cannot be verified
    "number hazard": (lambda p: {**p, "message": {**p["message"], "metadata": {
        **_meta(p), "timestamp": float(NOW)}}}, Code.CANNOT_VERIFY, "cannot-verify"),
    "recipient": (lambda p: params(to=OTHER.did), Code.NOT_FOR_ME, "wrong-recipient"),
    "freshness": (lambda p: params(ts=NOW - MESSAGE_WINDOW - 1),
                  Code.REPLAY_OR_STALE, "stale"),
    "from the future": (lambda p: params(ts=NOW + MESSAGE_WINDOW + 1),
                        Code.REPLAY_OR_STALE, "from-the-future"),
}


def _tampered_text(p: dict[str, Any], text: str) -> dict[str, Any]:
    p["message"]["parts"][0]["text"] = text
    return p


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_stage_refuses_for_its_own_reason(case: str) -> None:
    breaks, code, reason = CASES[case]
    with pytest.raises(RpcError) as refused:
        read_message(breaks(copy.deepcopy(params())), me=ME.did, now=NOW, window=DOOR_WINDOW,
                     terms={"scheme": "x"}).verify()
    assert (refused.value.code, refused.value.reason) == (code, reason)


def test_a_keyless_walk_in_is_told_the_terms_it_was_given() -> None:
    with pytest.raises(RpcError) as refused:
        read_message(_no_envelope(params()), me=ME.did, now=NOW, window=DOOR_WINDOW,
                     terms={"scheme": "x"})
    assert refused.value.error_object()["data"]["accepts"] == [{"scheme": "x"}]


def test_the_signature_is_verify_s_and_read_message_does_no_crypto() -> None:
    arrival = read_message(_tampered(params()), me=ME.did, now=NOW, window=DOOR_WINDOW)
    assert arrival.text == "changed after signing"  # read, not yet verified
    with pytest.raises(RpcError) as refused:
        arrival.verify()
    assert refused.value.code == Code.SIGNATURE


def test_a_good_message_reads_into_an_arrival_and_verifies() -> None:
    arrival = read_message(params(), me=ME.did, now=NOW, window=DOOR_WINDOW)
    arrival.verify()
    assert (arrival.sender, arrival.to, arrival.context_id, arrival.timestamp) == (
        ALICE.did, ME.did, "c-1", NOW)
    assert (arrival.channel, arrival.relay, arrival.reply_hint, arrival.reply_to) == (
        "door", "https://relay.example/r", "m-mine", None)  # the hint is not proof
    assert arrival.to_json()["sig"] == arrival.sig


def test_the_recipient_is_the_callers_never_the_messages() -> None:
    """A message to OTHER is refused by ME whatever it says of itself."""
    with pytest.raises(RpcError) as refused:
        read_message(params(to=OTHER.did), me=ME.did, now=NOW, window=DOOR_WINDOW)
    assert refused.value.reason == "wrong-recipient"
    read_message(params(to=OTHER.did), me=OTHER.did, now=NOW, window=DOOR_WINDOW).verify()


def test_a_signer_the_transport_vouches_for_must_be_the_sender() -> None:
    with pytest.raises(RpcError) as refused:
        read_message(params(), me=ME.did, now=NOW, window=RELAYED_WINDOW, signer=OTHER.did)
    assert refused.value.reason == "signer-not-depositor"
    read_message(params(), me=ME.did, now=NOW, window=RELAYED_WINDOW, signer=ALICE.did)


@pytest.mark.parametrize(("age", "door", "relayed"), [
    (MESSAGE_WINDOW + 1, "stale", None),  # a relayed message may have waited
    (30 * 24 * 3600 + 1, "stale", "too-old"),
    (-(MESSAGE_WINDOW + 1), "from-the-future", "from-the-future"),
])
def test_each_way_in_passes_its_own_window(age: int, door: str, relayed: str | None) -> None:
    for window, expected in ((DOOR_WINDOW, door), (RELAYED_WINDOW, relayed)):
        p = params(ts=NOW - age)
        if expected is None:
            read_message(p, me=ME.did, now=NOW, window=window).verify()
            continue
        with pytest.raises(RpcError) as refused:
            read_message(p, me=ME.did, now=NOW, window=window)
        assert refused.value.reason == expected, window


def test_a_window_says_its_bound_in_its_detail() -> None:
    with pytest.raises(RpcError) as refused:
        Window(30 * 24 * 3600, 300, too_old="too-old").judge(0, 30 * 24 * 3600 + 1)
    assert refused.value.detail == "the message is more than 30 days old"
    with pytest.raises(RpcError) as refused:
        Window(30 * 24 * 3600, 300).judge(301, 0)
    assert refused.value.detail == "the message is dated more than 300 s ahead"


def test_an_arrival_is_valid_on_construction() -> None:
    good = {"from": ALICE.did, "messageId": "m-1", "contextId": None, "text": "hi",
            "timestamp": NOW, "sig": "s"}
    assert Arrival.from_json(good).channel == "door"
    for bad in ({"timestamp": True}, {"timestamp": "1"}, {"text": None}, {"channel": "mail"},
                {"relay": 5}, {"contextId": 1}):
        with pytest.raises(TypeError):
            Arrival.from_json({**good, **bad})


# -- an onboard/claim: its message goes through the same pipeline, with CLAIM_WINDOW ------


def _claim(*, to: str = ME.did, ts: int = NOW, key: SigningKey = ALICE) -> dict[str, Any]:
    from muretai_cli.artifacts.invite import build_claim, mint_invite, verify_invite

    invite = verify_invite(mint_invite(ME, name="Me", exp=NOW + 3600, relay="https://r.example/"),
                           now=NOW)
    claim = build_claim(key, invite=invite, name="Al", now=ts)
    if to != ME.did:  # re-signed to another recipient, the binding kept
        claim["message"] = _resigned(key, claim["message"], to=to)
    return claim


def _resigned(key: SigningKey, message: dict[str, Any], *, to: str
                         ) -> dict[str, Any]:
    from muretai_cli.seam import sign_envelope

    return sign_envelope(key, to=to, text=message["text"], timestamp=message["timestamp"],
                         context_id=message["contextId"])


def _claim_refusal(claim: dict[str, Any], **kw: Any) -> str:
    from muretai_cli.errors import Refused
    from muretai_cli.inbox.claims import read_claim

    with pytest.raises(Refused) as caught:
        read_claim(claim, me=ME.did, now=NOW, **kw)
    return caught.value.code


def test_a_claim_is_read_by_the_receiving_pipeline_with_its_own_window(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A claim that skipped read_envelope (e.g. through the offline artifact check, whose
    # window is an int of its own) would be accepted here: the window it is judged by is
    # the one named CLAIM_WINDOW in the pipeline, and the pipeline's depositor rule holds.
    from muretai_cli.inbox import claims
    from muretai_cli.inbox.arrival import CLAIM_WINDOW

    assert Window(MESSAGE_WINDOW, MESSAGE_WINDOW) == CLAIM_WINDOW
    assert claims.read_claim(_claim(), me=ME.did, now=NOW).from_did == ALICE.did
    assert claims.read_claim(_claim(ts=NOW - 60), me=ME.did, now=NOW).name == "Al"
    monkeypatch.setattr(claims, "CLAIM_WINDOW", Window(30, 30))
    assert _claim_refusal(_claim(ts=NOW - 60)) == "stale"
    assert _claim_refusal(_claim(ts=NOW + 60)) == "from-the-future"


def test_a_claim_meets_each_rule_of_the_pipeline() -> None:
    assert _claim_refusal(_claim(to=OTHER.did)) == "wrong-recipient"
    assert _claim_refusal(_claim(ts=NOW - MESSAGE_WINDOW - 1)) == "stale"
    assert _claim_refusal(_claim(), signer=OTHER.did) == "signer-not-depositor"
    forged = _claim()
    forged["message"]["sig"] = OTHER.sign(b"x")
    assert _claim_refusal(forged) == "bad-signature"
    assert _claim_refusal({**_claim(), "message": "x"}) == "malformed-claim"
