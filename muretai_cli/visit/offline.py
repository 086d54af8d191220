"""Offline verdicts on single artifacts: a signed message, a signed card envelope.

These are what ``muretai verify`` runs, and what a CI job runs over a thousand files.
Each returns a ``Verdict`` whose reasons are named; none of them touches the network.
"""

from __future__ import annotations

import json
from typing import Any

from muretai_cli.artifacts.message import envelope_of, message_of
from muretai_cli.errors import MuretaiError
from muretai_cli.seam import (
    ENVELOPE_MAX_AGE,
    ENVELOPE_MAX_AHEAD,
    MESSAGE_WINDOW,
    check_fresh,
    envelope_freshness,
    open_card_envelope,
    timestamp_seconds,
    verify_envelope,
)
from muretai_cli.urls import BaseUrl, same_base
from muretai_cli.verdict import Reason, Verdict, error, warning


def _failed(subject: str, exc: MuretaiError, facts: dict[str, Any] | None = None) -> Verdict:
    return Verdict.of(subject, [error(exc.code, exc.detail)], facts)


def check_message(doc: object, *, to_did: str, now: int,
                  window: int = MESSAGE_WINDOW) -> Verdict:
    """A ``message/send`` request or bare A2A message, signed for ``to_did``, fresh at ``now``.

    What a door would refuse at its request-shape rungs is refused here too (the same
    functions); unsigned parts a reader might act on are named in warnings."""
    shape = _door_shape(doc)
    if shape is not None:
        return Verdict.of("message", [shape])
    notes: list[Reason] = []
    try:
        env = envelope_of(doc)
        inline = (message_of(doc).get("metadata") or {}).get("keystate")
        signer = None
        if inline is not None and isinstance(env.get("from"), str):
            from muretai_cli.artifacts.keystate import message_signer

            signer = message_signer(env["from"], inline, None, now=now).signer_did
            notes.append(warning("op-key", f"signed by the op key {signer}, which the attached "
                                 "KeyState delegates; judged as a first contact (no pin "
                                 "here): a receiver that pinned a later record may refuse it"))
        fields = verify_envelope(env, to_did=to_did, signer=signer)
    except MuretaiError as exc:
        return _failed("message", exc)
    stamp = fields["timestamp"]
    facts = {"from": fields["from"], "to": fields["to"], "messageId": fields["messageId"],
             "contextId": fields["contextId"], "timestamp": stamp, "text": fields["text"]}
    try:
        check_fresh(stamp, now, window)
    except MuretaiError as exc:
        return _failed("message", exc, facts)
    notes += unsigned_warnings(doc)
    if isinstance(stamp, float):  # verified as received; never emitted as a float
        facts["timestamp"] = timestamp_seconds(stamp)
        notes.insert(0, warning("float-timestamp", f"the signed timestamp is the float "
                                f"{stamp!r}: it verified over Python's spelling of it, which "
                                "not every verifier can reproduce; sign integer seconds"))
    return Verdict.of("message", notes, facts)


def _door_shape(doc: object) -> Reason | None:
    """The door's request-shape rungs (JSON-RPC 2.0 ``message/send``, the A2A message shape,
    the text size) as the door runs them; a bare message is judged as a request's
    ``params.message``. None when the door would go on to the signed fields."""
    from muretai_cli.inbox import ladder

    try:
        if not isinstance(doc, dict):
            raise ladder.RpcError(ladder.Code.INVALID_REQUEST, "not-an-object")
        params: dict[str, Any] = {"message": doc}
        if _is_request(doc):
            method, params = ladder.rpc_shape(doc)
            if method != "message/send":
                raise ladder.RpcError(ladder.Code.METHOD_NOT_FOUND, "not-message-send")
        ladder.text_size(ladder.a2a_message(params)["text"])
    except ladder.RpcError as err:
        return error(err.reason, f"a door refuses this at its request-shape rung "
                                 f"(JSON-RPC {int(err.code)} {ladder.MESSAGES[err.code]}: "
                                 f"{err.reason}); the signature does not cover these parts")
    return None


def _is_request(doc: dict[str, Any]) -> bool:
    return any(key in doc for key in ("jsonrpc", "method", "params", "result", "id"))


# Parts of a request the signature does not cover, that change what a reader would do:
# (where, code, what acting on it would mean). Each present one is a warning naming it.
_UNSIGNED = (
    (("message", "taskId"), "unsigned-task-id", "a task it claims to continue"),
    (("message", "referenceTaskIds"), "unsigned-reference-task-ids", "tasks it refers to"),
    (("message", "metadata", "replyTo"), "unsigned-reply-to",
     "the message it claims to answer"),
    (("message", "metadata", "relay"), "unsigned-relay", "where to send an answer"),
    (("configuration", "pushNotificationConfig"), "unsigned-push-url",
     "a URL to call back with updates"),
    (("pushNotificationConfig",), "unsigned-push-url", "a URL to call back with updates"),
)


def unsigned_warnings(doc: object) -> list[Reason]:
    """Warnings naming each unsigned part of a (shape-checked) request that a reader might
    act on: task references, push-notification URLs, reply links. Their values are the
    sender's word at best, anyone's on the way at worst."""
    if not isinstance(doc, dict):
        return []
    params = doc.get("params") if _is_request(doc) else {"message": doc}
    prefix = "params." if _is_request(doc) else ""
    out: list[Reason] = []
    for path, code, meaning in _UNSIGNED:
        value: Any = params
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            continue
        if code == "unsigned-push-url" and isinstance(value, dict):
            value = value.get("url", value)
        shown = json.dumps(value, ensure_ascii=False)
        shown = shown if len(shown) <= 120 else shown[:120] + "…"
        out.append(warning(code, f"{prefix}{'.'.join(path)} = {shown} is not signed: "
                                 f"{meaning}, as anyone on the way may have set it; "
                                 "do not act on it as the sender's word"))
    return out


def card_freshness(ts: int, now: int) -> list[Reason]:
    """The one rule for a card envelope's age, wherever a card is judged (verify card, card
    fetch, handoff check): dated more than ENVELOPE_MAX_AHEAD ahead is refused
    (``envelope-from-the-future``); older than ENVELOPE_MAX_AGE is ``stale-envelope``, a
    warning (the signature still holds, the card may be out of date)."""
    verdict = envelope_freshness(ts, now)
    if verdict == "from-the-future":
        return [error("envelope-from-the-future", f"the envelope is dated {ts - now} s ahead "
                                                  f"(more than {ENVELOPE_MAX_AHEAD} s)")]
    if verdict == "stale":
        return [warning("stale-envelope", f"the envelope was signed {now - ts} s ago "
                                          f"(more than {ENVELOPE_MAX_AGE // 3600} h)")]
    return []


def check_card_envelope(doc: object, *, did: str, now: int,
                        origin: BaseUrl | None = None) -> Verdict:
    """A signed card envelope under the DID the caller expects, optionally for a base URL."""
    try:
        signed = open_card_envelope(doc, expected_did=did)
    except MuretaiError as exc:
        return _failed("card", exc)
    card = signed.card
    reasons = card_freshness(signed.ts, now)
    if origin is not None and not same_base(str(card.get("url", "")), origin):
        reasons.append(error("wrong-origin", f"the card's url {str(card.get('url'))[:200]!r} "
                                             f"does not name {origin.text}"))
    return Verdict.of("card", reasons, {"did": card["did"], "ts": signed.ts,
                                        "url": card.get("url"), "name": card.get("name")})
