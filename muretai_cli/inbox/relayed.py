"""A relayed deposit's way in: open -> parse boundary -> ``message/send`` shape -> six fields,
``to`` is me, signer is the depositor -> age, not already stored -> signature -> consent
(the door's own code, ``consent.admit``) -> commit. The caller acknowledges only after.

``receive`` is total on hostile input: every deposit ends as ``accepted``, ``held``,
``refused`` (with a reason) or ``duplicate`` (a redelivery of one already committed), and
nothing here raises for what a relay or a peer sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import MuretaiError
from muretai_cli.inbox import consent, ladder
from muretai_cli.inbox.ladder import RpcError
from muretai_cli.inbox.store.keystate_pins import KeyStatePinStore

if TYPE_CHECKING:
    from muretai_cli.inbox.consent import Policy
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.seam import SigningKey

MAX_AGE = 30 * 24 * 3600  # a relayed message may wait for days, not for ever
MAX_AHEAD = 300
Outcome = Literal["accepted", "held", "refused", "duplicate", "joined"]


@dataclass(frozen=True, slots=True)
class Received:
    outcome: Outcome
    reason: str | None = None
    detail: str | None = None
    request_id: str | None = None


class NotForUs(Exception):
    """One rung refused a deposit (internal to ``receive``)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def proved_reply_to(store: IdentityStore, me: str, fields: dict[str, Any],
                    hint: str | None) -> str | None:
    """``replyTo`` kept only when the message's SIGNED fields prove it: its contextId is the
    one of my message ``hint`` to that sender, or its messageId is our door's derived one."""
    from muretai_cli.artifacts.message import reply_message_id

    if hint is None:
        return None
    mine = store.sent_message(hint)
    if mine is None or mine["to"] != fields["from"]:
        return None
    if fields["messageId"] == reply_message_id(me, hint):
        return hint
    if mine["contextId"] is not None and fields["contextId"] == mine["contextId"]:
        return hint
    return None


class ClaimDeposit(Exception):
    """The deposit is an ``onboard/claim`` (internal to ``receive``): handled by claims.py."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__("onboard/claim")
        self.params = params


def _claim(store: IdentityStore, key: SigningKey, params: dict[str, Any], *, sender: str,
           deposit_id: str, now: int) -> Received:
    """A relayed claim: the signer must be the depositor; then the door's own claim rules.
    A database failure is raised, not recorded as a refusal (the claim would be acked and
    lost): the relay gives it again."""
    from muretai_cli.db import DatabaseUnavailable
    from muretai_cli.inbox.claims import process_claim

    try:
        message = params.get("message")
        if not isinstance(message, dict) or message.get("from") != sender:
            raise NotForUs("signer-not-depositor", "the claim's from is not the DID that "
                                                   "deposited it")
        joined = process_claim(params, me=key.did, store=store, now=now)
    except NotForUs as exc:
        store.record_refused(sender, deposit_id, exc.reason, exc.detail, now)
        return Received("refused", exc.reason, exc.detail)
    except DatabaseUnavailable:
        raise
    except MuretaiError as exc:
        store.record_refused(sender, deposit_id, exc.code, exc.detail[:200], now)
        return Received("refused", exc.code, exc.detail[:200])
    store.record_joined(sender, deposit_id, joined.claim.name, now,
                        new_contact=joined.new_contact)
    return Received("joined")


def _rung(exc: RpcError) -> NotForUs:
    return NotForUs(exc.reason, ladder.MESSAGES.get(exc.code, "refused"))


def check_deposit(key: SigningKey, *, sender: str, from_enc: str, blob: str,
                  now: int, pins: KeyStatePinStore | None = None) -> dict[str, Any]:
    """The verified six fields (+ sig, relay, replyTo hint) of one deposit, or ``NotForUs``.
    A deposit signed by an op key is judged against, and may advance, the sender's pin."""
    from muretai_cli.seam import open_box

    plain = open_box(key, from_enc, blob, ad=b"")
    if plain is None:
        raise NotForUs("cannot-open", "the blob does not open with this identity's key and "
                                      "the depositor's enc_pub")
    try:
        doc = ladder.parse_request(plain)
        method, params = ladder.rpc_shape(doc)
        if method == "onboard/claim":
            raise ClaimDeposit(params)
        if method != "message/send":
            raise NotForUs("not-message-send", f"the request is {method}, not message/send")
        env = ladder.a2a_message(params)
        ladder.text_size(env["text"])
        fields = ladder.six(env, {})
        if fields["to"] != key.did:
            raise NotForUs("wrong-recipient", "the message is addressed to someone else")
        if fields["from"] != sender:
            raise NotForUs("signer-not-depositor", "the message's from is not the DID that "
                                                   "deposited it")
        stamp = ladder.seconds(fields["timestamp"])
        if stamp < now - MAX_AGE:
            raise NotForUs("too-old", "the message is more than 30 days old")
        if stamp > now + MAX_AHEAD:
            raise NotForUs("from-the-future", "the message is dated more than 300 s ahead")
        pinned = None if pins is None or env["keystate"] is None else pins.get_text(sender)
        signer = ladder.op_key(fields, env["keystate"], pinned, now)
        ladder.signature(fields, env["sig"], signer=signer.signer_did)
        if signer.adopt is not None and pins is not None:
            pins.offer(signer.adopt, now)
    except RpcError as exc:
        raise _rung(exc) from None
    fields["sig"] = env["sig"]
    fields["relay"] = env["relay"]
    fields["replyHint"] = env["replyTo"]
    return fields


def receive(store: IdentityStore, key: SigningKey, policy: Policy, *, deposit_id: str,
            sender: str, from_enc: str, blob: str, now: int,
            gate: Callable[[str], dict[str, Any]] | None = None,
            seen: bool | None = None) -> Received:
    """Take one deposit in: commit it (inbox or held) or say why not. Never raises for
    what the deposit holds; a database failure is raised (never made a refusal: the
    caller commits nothing and acknowledges nothing, so the relay gives it again).
    ``seen``: whether the deposit is committed already, when the caller looked it up for
    a whole listen answer (``IdentityStore.deposits_seen``); None looks it up here."""
    from muretai_cli.db import DatabaseUnavailable

    if store.deposit_seen(sender, deposit_id) if seen is None else seen:
        return Received("duplicate")
    try:
        fields = check_deposit(key, sender=sender, from_enc=from_enc, blob=blob, now=now,
                               pins=KeyStatePinStore(store.db))
        stored, status = store.relayed_lookup(fields["from"], fields["messageId"])
        if stored:
            raise NotForUs("replay", "a message with this messageId from this sender is "
                                     "already in the store")
    except DatabaseUnavailable:
        raise
    except ClaimDeposit as claim:
        return _claim(store, key, claim.params, sender=sender, deposit_id=deposit_id, now=now)
    except NotForUs as exc:
        store.record_refused(sender, deposit_id, exc.reason, exc.detail, now)
        return Received("refused", exc.reason, exc.detail)
    except MuretaiError as exc:  # pragma: no cover - every rung above raises NotForUs
        store.record_refused(sender, deposit_id, exc.code, exc.detail[:200], now)
        return Received("refused", exc.code, exc.detail[:200])
    env = {**fields, "channel": "relay", "depositId": deposit_id,
           "replyTo": proved_reply_to(store, key.did, fields, fields.pop("replyHint"))}
    try:
        consent.admit(store, policy, env, status, now,
                      gate=gate or (lambda rid: {"requestId": rid}))
    except RpcError as exc:
        if exc.code == -32014 and exc.data is not None:
            return Received("held", request_id=str(exc.data.get("requestId")))
        if exc.reason == "replay":
            return Received("duplicate")
        store.record_refused(sender, deposit_id, exc.reason,
                             ladder.MESSAGES.get(exc.code, "refused"), now)
        return Received("refused", exc.reason, ladder.MESSAGES.get(exc.code, "refused"))
    return Received("accepted")
