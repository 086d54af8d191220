"""Sending a signed DM: grant verdict -> redeem -> one signed POST -> reply verdict.

Exactly one ``message/send`` POST per call, never retried: an HTTP 429/503 or a JSON-RPC
error is the door's answer (``PeerRefused``, with ``retryAfter`` seconds when given). A
reply counts as the door's only after every check passes, each failure named; a
connection is remembered only then.

A reply is bound to the message it answers in signed bytes, never by its unsigned
``replyTo``: its signed ``contextId`` must be the conversation's (a new conversation gets a
fresh random one), and when the door's card promises it (``muretai.replyBinding``) its
signed ``messageId`` must be ``reply_message_id(me, sent messageId)`` or
``receipt_message_id(me, sent messageId)``. A reply bound by neither is refused
(``reply-not-bound``); one bound only by the conversation says so.

Receipts are not answers: a verified answer whose signed ``messageId`` is
``receipt_message_id(me, sent messageId)`` is the door's automatic receipt (delivered,
nobody answered yet), reported under ``receipt``; any other verified answer (an owner's or
``--on-message`` answer, the reference Agent Entry's responder, an older muretai door's
receipt, which carries no marker) is a ``reply``.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import (
    DeadlineExceeded,
    InputError,
    MuretaiError,
    PeerRefused,
    Refused,
    Unreachable,
)
from muretai_cli.inbox.ladder import Code
from muretai_cli.urls import BaseUrl, base_from_any, same_base
from muretai_cli.verdict import Reason, Verdict, error, warning
from muretai_cli.visit.card import CardCheck

if TYPE_CHECKING:
    from muretai_cli.artifacts.message import Delegated
    from muretai_cli.home import ConnectionStore, PinStore, TrustList
    from muretai_cli.net import HttpResult, SafeClient
    from muretai_cli.seam import SigningKey
    from muretai_cli.visit.handoff import CardSource, EntryCheck

METHOD_NOT_FOUND = Code.METHOD_NOT_FOUND
REPLAY = Code.REPLAY_OR_STALE  # a door that answers a retry so has seen the first attempt
Redeemed = Literal["redeemed", "open-door", "not-needed"]
# "message": the signed messageId is derived from the one sent; "conversation": only the
# signed contextId matches, so the reply may answer any message of that conversation.
Binding = Literal["message", "conversation"]


@dataclass(frozen=True, slots=True)
class Target:
    """Where a DM goes and who must answer: the door's DID and its card's ``url``."""

    door_did: str
    endpoint: str
    base: BaseUrl
    grant: Mapping[str, Any] | None = None
    source: str = "card"
    card: CardCheck | None = None
    reply_binding: str | None = None  # the door's promise of message-bound replies


@dataclass(frozen=True, slots=True)
class ReplyCheck:
    verdict: Verdict
    kind: str  # "message" | "task" | "none"
    text: str | None = None
    state: str | None = None
    message_id: str | None = None
    binding: Binding | None = None  # what the signature proves the reply answers
    receipt: bool = False  # verified, and signed as the door's automatic receipt

    def to_json(self) -> dict[str, Any]:
        return {"verified": self.verdict.ok, "kind": self.kind, "text": self.text,
                "state": self.state, "messageId": self.message_id,
                "boundTo": self.binding if self.verdict.ok else None,
                "reasons": [r.to_json() for r in self.verdict.reasons]}


@dataclass(frozen=True, slots=True)
class DmReport:
    to: str
    endpoint: str
    sent_id: str
    redeemed: Redeemed
    reply: ReplyCheck
    remembered: bool
    grant: Mapping[str, Any] = field(default_factory=dict)
    card: CardCheck | None = None
    message: Mapping[str, Any] = field(default_factory=dict)  # the six fields sent

    @property
    def exit_code(self) -> int:
        return 0 if self.reply.verdict.ok else 1

    @property
    def receipt(self) -> bool:
        """The door only said it delivered the message (its signed receipt, or the answer
        to a retry that says the first attempt arrived): nobody has answered yet."""
        return self.reply.receipt or self.reply.kind == "lost"

    def to_json(self) -> dict[str, Any]:
        check = self.reply.to_json()
        return {"ok": self.exit_code == 0, "to": self.to, "endpoint": self.endpoint,
                "sent": self.sent_id, "redeem": self.redeemed, **dict(self.grant),
                "receipt": check if self.receipt else None,
                "reply": None if self.receipt else check, "remembered": self.remembered,
                "card": self.card.to_json() if self.card is not None else None}


def _require_card(card: CardCheck, to_did: str) -> CardCheck:
    if not card.ok:
        detail = "; ".join(f"{r.code}: {r.detail}" for r in card.verdict.errors)
        raise Refused("card-refused", f"the card of {card.base.text} is refused: {detail}",
                      data={"card": card.to_json()})
    if card.did != to_did:  # pragma: no cover - fetch_card(expected_did=...) refuses first
        raise Refused("did-mismatch", f"the card names {card.did}, not {to_did}")
    return card


def target_from_card(card: CardCheck, to_did: str, *, grant: Mapping[str, Any] | None = None,
                     source: str = "card") -> Target:
    """A target from a card that passed every rule and names ``to_did``.

    Without a grant of its own, the card's ``contact`` grant is used; a refused one
    refuses here (a first DM is what needs it).
    """
    _require_card(card, to_did)
    endpoint = card.endpoint
    if endpoint is None or not same_base(endpoint, card.base):  # a passing card has both
        raise Refused("card-refused", f"the card of {card.base.text} names no door at its "
                                      "own base")
    if grant is None and card.contact is not None:
        if not card.contact.ok:
            reason = card.contact.errors[0]
            raise Refused(reason.code, f"the card's contact grant is refused: {reason.detail}")
        grant = card.card.get("contact") if card.card is not None else None
    return Target(to_did, endpoint, card.base, grant, source, card, promised_binding(card))


def promised_binding(card: CardCheck) -> str | None:
    """The card's promise of message-bound replies (``muretai.replyBinding``), if ours."""
    from muretai_cli.artifacts.message import REPLY_BINDINGS

    section = card.card.get("muretai") if card.card else None
    promise = section.get("replyBinding") if isinstance(section, Mapping) else None
    return promise if isinstance(promise, str) and promise in REPLY_BINDINGS else None


def resolve_target(to_did: str, *, connect: str | Mapping[str, Any] | None,
                   card_url: str | None, client: SafeClient, now: int,
                   connections: ConnectionStore, pins: PinStore | None = None,
                   trust: TrustList | None = None) -> Target:
    """Where to send: a card URL (fetched and judged), a grant plus an address, or a
    remembered connection. A grant carries no address of its own."""
    from muretai_cli.visit.card import fetch_card

    def card_of(url: str) -> CardCheck:
        return fetch_card(url, client=client, now=now, expected_did=to_did, pins=pins,
                          trust=trust)

    if isinstance(connect, Mapping):
        from muretai_cli.artifacts.grant import check_grant

        grant = check_grant(dict(connect), for_did=to_did, now=now).to_json()
        if card_url is not None:
            return target_from_card(card_of(card_url), to_did, grant=grant,
                                    source="grant+card")
        known = connections.get(to_did)
        if known is None:
            raise InputError("no-address", f"a grant carries no address, and {to_did} is not a "
                                           "remembered connection",
                             hint="add --card-url URL (the door's card or base URL)")
        return Target(to_did, known.endpoint, base_from_any(known.base), grant, "connection",
                      reply_binding=known.reply_binding)
    if connect is not None or card_url is not None:
        url = connect if isinstance(connect, str) else card_url
        if url is None:
            raise InputError("bad-connect", "connect is neither a grant object nor a card URL")
        return target_from_card(card_of(url), to_did)
    known = connections.get(to_did)
    if known is None:
        raise InputError("not-connected", f"not yet connected to {to_did}",
                         hint="give --connect CARD_URL or --connect GRANT_FILE --card-url URL")
    return Target(to_did, known.endpoint, base_from_any(known.base), None, "connection",
                  reply_binding=known.reply_binding)


def _rpc_answer(result: HttpResult, what: str, *, missing_ok: bool = False) -> dict[str, Any]:
    """The JSON-RPC answer; HTTP refusals and JSON-RPC errors become ``PeerRefused``.

    With ``missing_ok``, a 2xx answer that is no JSON-RPC object is an empty answer (the
    caller reports it as no reply) rather than a refusal.
    """
    from muretai_cli.net import http_refusal
    from muretai_cli.seam import parse_document

    doc: object = None
    try:
        doc = parse_document(result.body) if result.body else None
    except InputError:
        doc = None
    rpc_error = doc.get("error") if isinstance(doc, dict) else None
    refusal = http_refusal(result)
    if isinstance(rpc_error, dict):
        from muretai_cli.visit.remedies import door_refusal

        raise door_refusal(what, rpc_error, hint=refusal.hint if refusal is not None else None,
                           data=refusal.data if refusal is not None else None)
    if refusal is not None:
        raise refusal
    if not isinstance(doc, dict):
        if missing_ok:
            return {}
        raise PeerRefused("malformed-answer", f"the door's answer to {what} is not a JSON-RPC "
                                              "object", data={"status": result.status})
    return doc


def redeem(client: SafeClient, key: SigningKey, target: Target, now: int
           ) -> tuple[Redeemed, dict[str, Any]]:
    """One ``contact/redeem`` POST. -32601 means an open door: knock directly."""
    from muretai_cli.artifacts.grant import REDEEM_METHOD, redeem_params
    from muretai_cli.seam import canonical_bytes

    if target.grant is None:
        return "not-needed", {}
    request = {"jsonrpc": "2.0", "id": f"redeem-{secrets.token_hex(6)}",
               "method": REDEEM_METHOD, "params": redeem_params(key, target.grant, now=now)}
    answer = client.post_json(target.endpoint, canonical_bytes(request))
    try:
        doc = _rpc_answer(answer, REDEEM_METHOD)
    except PeerRefused as exc:
        rpc = exc.data.get("rpcError")
        if isinstance(rpc, dict) and rpc.get("code") == METHOD_NOT_FOUND:
            return "open-door", {}
        raise
    result = doc.get("result")
    if not isinstance(result, dict) or result.get("ok") is not True:
        raise PeerRefused("redeem-refused", "the door did not confirm the redemption",
                          data={"result": result if isinstance(result, dict) else None})
    facts: dict[str, Any] = {"grantId": result.get("grantId", target.grant.get("id"))}
    if isinstance(result.get("expires"), int) and not isinstance(result.get("expires"), bool):
        facts["expires"] = result["expires"]
    return "redeemed", facts


@dataclass(frozen=True, slots=True)
class Sent:
    """What was sent, as a reply must prove it answers it: its messageId and contextId, and
    the messageId a door that promised bound replies must sign (None: no promise)."""

    message_id: str
    context_id: str | None
    bound_reply_id: str | None = None
    receipt_id: str | None = None  # the messageId a muretai door's receipt signs


def sent_of(me: str, message: Mapping[str, Any], *, promised: bool) -> Sent:
    """What a reply to ``message`` (sent by ``me``) must prove it answers; ``promised``: the
    door's card promised message-bound replies."""
    from muretai_cli.artifacts.message import receipt_message_id, reply_message_id

    mid = str(message["messageId"])
    return Sent(mid, message.get("contextId"), reply_message_id(me, mid) if promised else None,
                receipt_message_id(me, mid))


def binding_of(fields: Mapping[str, Any], sent: Sent) -> tuple[Binding | None, Reason | None]:
    """What the reply's SIGNED fields prove it answers; an error reason when not enough."""
    derived = fields["messageId"] in tuple(i for i in (sent.bound_reply_id, sent.receipt_id)
                                           if i is not None)
    if sent.bound_reply_id is not None and not derived:
        return None, error("reply-not-bound", f"the reply's signed messageId "
                                              f"{str(fields['messageId'])[:80]!r} is not "
                                              f"the one this door promised for "
                                              f"{sent.message_id} ({sent.bound_reply_id}, or "
                                              f"its receipt's {sent.receipt_id})")
    if derived and fields["contextId"] == sent.context_id:
        return "message", None
    if sent.context_id is not None and fields["contextId"] == sent.context_id:
        return "conversation", None
    return None, error("reply-not-bound", f"the reply's signed contextId "
                                          f"{str(fields['contextId'])[:80]!r} is not this "
                                          f"conversation's ({sent.context_id}); nothing signed "
                                          f"ties it to {sent.message_id}")


def check_signed_reply(message: object, *, door_did: str, me: str, sent: Sent, now: int
                       ) -> tuple[list[Reason], str | None, Binding | None]:
    """Every check a reply must pass to count as the door's; each failure named."""
    from muretai_cli.artifacts.message import envelope_of
    from muretai_cli.seam import check_fresh, signing_payload, six_fields, verify_signature

    try:
        env = envelope_of(message)
        fields = six_fields(env)
    except MuretaiError as exc:
        return [error("reply-malformed", f"the reply is not a signed A2A message: {exc.code}: "
                                         f"{exc.detail}")], None, None
    text = fields["text"]
    if env.get("sig") is None:
        return [error("reply-unsigned", "the reply carries no signature; it is unverified")], \
            text, None
    reasons: list[Reason] = []
    if fields["from"] != door_did:
        reasons.append(error("reply-from-other", f"the reply is from {fields['from']}, not the "
                                                 f"door's DID {door_did}"))
    if fields["to"] != me:
        reasons.append(error("reply-to-other", f"the reply is addressed to {fields['to']}, "
                                               f"not to you ({me})"))
    try:
        check_fresh(fields["timestamp"], now)
    except Refused as exc:
        reasons.append(error(f"reply-{exc.code}", f"the reply's {exc.detail}"))
    try:
        verify_signature(door_did, signing_payload(fields), env["sig"])
    except MuretaiError as exc:
        reasons.append(error("reply-bad-signature", f"the reply's signature does not verify "
                                                    f"under {door_did} ({exc.code})"))
    binding, unbound = binding_of(fields, sent)
    if unbound is not None:
        reasons.append(unbound)
    reply_to = env.get("replyTo")  # a hint only: the proof is the signed binding above
    if reply_to is None:
        reasons.append(warning("reply-no-replyto", "the reply does not say which message it "
                                                   "answers"))
    elif reply_to != sent.message_id:
        reasons.append(error("reply-to-other-message", f"the reply answers {str(reply_to)[:80]!r}"
                                                       f", not {sent.message_id}"))
    return reasons, text, binding


def check_reply(doc: Mapping[str, Any], *, door_did: str, me: str, sent: Sent, now: int
                ) -> ReplyCheck:
    """The ``result`` of a ``message/send`` answer: a Message, or a Task with its status."""
    result = doc.get("result")
    if not isinstance(result, dict):
        return ReplyCheck(Verdict.of("reply", [error("no-reply", "the door sent no reply; "
                                                                 "unverified")]), "none")
    if result.get("kind") == "task":
        found = result.get("status")
        status: dict[str, Any] = found if isinstance(found, dict) else {}
        state = status.get("state") if isinstance(status.get("state"), str) else None
        candidates = [status.get("message")]
        history = result.get("history")
        if isinstance(history, list):
            candidates.extend(history)
        reasons: list[Reason] = []
        verified = 0
        text: str | None = None
        binding: Binding | None = None
        for item in candidates:
            if not isinstance(item, dict) or item.get("role") != "agent":
                continue
            meta = item.get("metadata")
            if not isinstance(meta, dict) or meta.get("sig") is None:
                continue  # unsigned task messages are shown as the task's, never as verified
            found, item_text, item_binding = check_signed_reply(item, door_did=door_did, me=me,
                                                                sent=sent, now=now)
            reasons.extend(found)
            if not any(r.severity == "error" for r in found):
                verified += 1
                text = item_text
                binding = item_binding
        if not verified and not any(r.severity == "error" for r in reasons):
            reasons.append(error("reply-unsigned", f"the task ({state}) carries no signed "
                                                   "message; it is unverified"))
        return ReplyCheck(Verdict.of("reply", reasons), "task", text, state,
                          result.get("id") if isinstance(result.get("id"), str) else None,
                          binding)
    found, text, binding = check_signed_reply(result, door_did=door_did, me=me, sent=sent,
                                              now=now)
    message_id = result.get("messageId")
    verdict = Verdict.of("reply", found)
    receipt = verdict.ok and sent.receipt_id is not None and message_id == sent.receipt_id
    return ReplyCheck(verdict, "message", text, None,
                      message_id if isinstance(message_id, str) else None, binding, receipt)


def deliver(key: SigningKey, target: Target, text: str, *, client: SafeClient, now: int,
            connections: ConnectionStore, context_id: str | None = None,
            reply_to: str | None = None, metadata: Mapping[str, Any] | None = None,
            message_key: SigningKey | Delegated | None = None) -> DmReport:
    """Redeem the target's grant if any, then exactly one signed ``message/send`` POST.

    A refusal carries what was sent (``data.sent``, ``data.contextId``), so a held message
    can be recorded as pending.
    """
    from muretai_cli.artifacts.message import build_message_send, new_context_id, signed_message
    from muretai_cli.seam import canonical_bytes

    redeemed, grant_facts = redeem(client, key, target, now)
    message = signed_message(message_key or key, to=target.door_did, text=text, now=now,
                             context_id=context_id or new_context_id(), reply_to=reply_to,
                             metadata=metadata)
    request = canonical_bytes(build_message_send(message))
    retried = False
    try:
        # Half the time left for the first attempt: a lost answer gets one retry.
        answer = client.post_json(target.endpoint, request,
                                  within=client.deadline.remaining() / 2)
    except (DeadlineExceeded, Unreachable):
        retried = True  # the answer was lost: the same bytes once more (seed 004)
        answer = client.post_json(target.endpoint, request)
    try:
        doc = _rpc_answer(answer, "message/send", missing_ok=True)
    except PeerRefused as exc:
        rpc = exc.data.get("rpcError")
        if retried and isinstance(rpc, dict) and rpc.get("code") == REPLAY:
            # The door saw the first attempt: delivered, and its reply was lost.
            lost = ReplyCheck(Verdict.of("reply", [warning(
                "reply-lost", "delivered; the reply was lost (the door answered the retry "
                              "as a replay of the first attempt)")]), "lost")
            return _report(key, target, message, now, redeemed, grant_facts, lost,
                           connections, text)
        exc.data.update({"sent": message["messageId"], "contextId": message["contextId"],
                         "timestamp": now})
        raise
    sent = sent_of(key.did, message, promised=target.reply_binding is not None)
    reply = check_reply(doc, door_did=target.door_did, me=key.did, sent=sent, now=now)
    if retried and reply.verdict.ok:
        reply = ReplyCheck(Verdict.of("reply", [*reply.verdict.reasons, warning(
            "reply-recovered", "the first answer was lost; the door answered the "
                               "byte-identical retry")]), reply.kind, reply.text, reply.state,
            reply.message_id, reply.binding, reply.receipt)
    return _report(key, target, message, now, redeemed, grant_facts, reply, connections, text)


def _report(key: SigningKey, target: Target, message: Mapping[str, Any], now: int,
            redeemed: Redeemed, grant_facts: dict[str, Any], reply: ReplyCheck,
            connections: ConnectionStore, text: str) -> DmReport:
    remembered = False
    if reply.verdict.ok and reply.kind != "lost":  # remembered only after a verified reply
        connections.remember(target.door_did, endpoint=target.endpoint, base=target.base.text,
                             now=now, grant_id=grant_facts.get("grantId"),
                             expires=grant_facts.get("expires"),
                             reply_binding=target.reply_binding)
        remembered = True
    six = {"messageId": message["messageId"], "contextId": message["contextId"], "text": text,
           "timestamp": now}
    return DmReport(target.door_did, target.endpoint, message["messageId"], redeemed, reply,
                    remembered, grant_facts, target.card, six)


def contact_and_dm(key: SigningKey, to_did: str, text: str, *, client: SafeClient, now: int,
                   connections: ConnectionStore, connect: str | Mapping[str, Any] | None = None,
                   card_url: str | None = None, pins: PinStore | None = None,
                   trust: TrustList | None = None, context_id: str | None = None) -> DmReport:
    """Connect if needed (card, grant, redeem) and knock once on ``to_did``'s door (no
    relay, nothing recorded: ``visit.send.send_dm`` is the operator's verb)."""
    if not text:
        raise InputError("empty-message", "the message is empty")
    target = resolve_target(to_did, connect=connect, card_url=card_url, client=client, now=now,
                            connections=connections, pins=pins, trust=trust)
    return deliver(key, target, text, client=client, now=now, connections=connections,
                   context_id=context_id)


def target_for_entry(item: EntryCheck, cards: CardSource) -> Target:
    """The target of a followable ``dm`` entry, from the cards its check already judged."""
    entry = item.entry
    if not item.followable or entry.to is None:
        raise Refused("not-followable", "only a dm entry that passed every check is followed")
    if isinstance(entry.connect, dict):
        card = item.card or cards.card_at(cards.origin)
        return target_from_card(card, entry.to, grant=entry.connect, source="handoff-grant")
    if isinstance(entry.connect, str):
        card = cards.card_at(base_from_any(entry.connect))
        return target_from_card(card, entry.to, source="handoff-card")
    return target_from_card(item.card or cards.card_at(cards.origin), entry.to,
                            source="handoff-origin")
