"""A relayed deposit's way in: open -> parse boundary -> ``message/send`` -> the receiving
pipeline (``arrival.read_message``: shape, six fields, ``to`` is me, signer is the depositor,
age within ``RELAYED_WINDOW``) -> not already stored -> ``Arrival.verify`` -> consent (the
door's own code, ``consent.admit``) -> commit. The caller acknowledges only after.

``receive`` is total on hostile input: every deposit ends as ``accepted``, ``held``,
``refused`` (with a reason) or ``duplicate`` (a redelivery of one already committed), and
nothing here raises for what a relay or a peer sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import MuretaiError
from muretai_cli.inbox import consent, ladder
from muretai_cli.inbox.arrival import Arrival, Window, read_message
from muretai_cli.inbox.ladder import Code, RpcError
from muretai_cli.inbox.store.keystate_pins import KeyStatePinStore
from muretai_cli.inbox.vouches import NO_VOUCH_BOOK, VouchBook
from muretai_cli.seam import CLOCK_SKEW, RELAYED_MAX_AGE

if TYPE_CHECKING:
    from muretai_cli.inbox.consent import Policy
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.seam import SigningKey

RELAYED_WINDOW = Window(RELAYED_MAX_AGE, CLOCK_SKEW, too_old="too-old")
Outcome = Literal["accepted", "held", "refused", "duplicate", "joined", "vouch"]


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


def _refused(store: IdentityStore, sender: str, deposit_id: str, reason: str, detail: str,
             now: int) -> Received:
    """Record a deposit refused (its sender never hears why) and say so."""
    store.record_refused(sender, deposit_id, reason, detail, now)
    return Received("refused", reason, detail)


def proved_reply_to(store: IdentityStore, me: str, arrival: Arrival,
                    hint: str | None) -> str | None:
    """``replyTo`` kept only when the message's SIGNED fields prove it: its contextId is the
    one of my message ``hint`` to that sender, or its messageId is our door's derived one."""
    from muretai_cli.artifacts.message import reply_message_id

    if hint is None:
        return None
    mine = store.sent_message(hint)
    if mine is None or mine["to"] != arrival.sender:
        return None
    if arrival.message_id == reply_message_id(me, hint):
        return hint
    if mine["contextId"] is not None and arrival.context_id == mine["contextId"]:
        return hint
    return None


class ClaimDeposit(Exception):
    """The deposit is an ``onboard/claim`` (internal to ``receive``): handled by claims.py."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__("onboard/claim")
        self.params = params


def _claim(store: IdentityStore, key: SigningKey, params: dict[str, Any], *, sender: str,
           deposit_id: str, now: int, received: int | None) -> Received:
    """A relayed claim: it was deposited within the relay's age window (``RELAYED_MAX_AGE``
    back, ``CLOCK_SKEW`` ahead); then the door's own claim rules (``claims.process_claim``:
    the receiving pipeline with ``CLAIM_WINDOW``, its signer the depositor), as of the
    moment the relay ``received`` it (now, when the relay did not say). A database
    failure is raised, not recorded as a refusal (the claim would be acked and lost): the
    relay gives it again."""
    from muretai_cli.db import DatabaseUnavailable
    from muretai_cli.inbox.claims import process_claim

    try:
        if received is not None and received < now - RELAYED_MAX_AGE:
            raise NotForUs("too-old", "the claim was deposited more than "
                                      f"{RELAYED_MAX_AGE // 86400} days ago")
        if received is not None and received > now + CLOCK_SKEW:
            raise NotForUs("from-the-future", "the relay dates the claim more than "
                                              f"{CLOCK_SKEW} s ahead")
        joined = process_claim(params, me=key.did, store=store, now=now, deposited=received,
                               signer=sender)
    except NotForUs as exc:
        return _refused(store, sender, deposit_id, exc.reason, exc.detail, now)
    except DatabaseUnavailable:
        raise
    except MuretaiError as exc:
        return _refused(store, sender, deposit_id, exc.code, exc.detail[:200], now)
    store.record_joined(sender, deposit_id, joined.claim.name, now,
                        new_contact=joined.new_contact)
    return Received("joined")


class VouchDeposit(Exception):
    """The deposit is ``introduce/propose`` or ``introduce/respond`` (internal to
    ``receive``): handled by proposals.py."""

    def __init__(self, method: str, params: dict[str, Any]) -> None:
        super().__init__(method)
        self.method = method
        self.params = params


def _vouch(store: IdentityStore, key: SigningKey, deposit: VouchDeposit, *, sender: str,
           deposit_id: str, now: int) -> Received:
    """A relayed proposal or response: its signer must be the depositor; then the door's
    own rules (``inbox.proposals``). A database failure is raised, as for a claim."""
    from muretai_cli.db import DatabaseUnavailable
    from muretai_cli.inbox.proposals import receive_proposal, receive_response

    try:
        if deposit.params.get("from") != sender:
            raise NotForUs("signer-not-depositor", "the proposal's or response's from is not "
                                                   "the DID that deposited it")
        if deposit.method == "introduce/propose":
            held = receive_proposal(deposit.params, me=key.did, store=store, now=now,
                                    channel="relay")
            code, detail = "proposed", held.row.id
        else:
            answered = receive_response(deposit.params, me=key.did, store=store, now=now)
            code, detail = "answered", str(answered["decision"])
    except NotForUs as exc:
        return _refused(store, sender, deposit_id, exc.reason, exc.detail, now)
    except DatabaseUnavailable:
        raise
    except MuretaiError as exc:
        return _refused(store, sender, deposit_id, exc.code, exc.detail[:200], now)
    store.record_vouch(sender, deposit_id, code, detail, now)
    return Received("vouch", code, detail)


def _rung(exc: RpcError) -> NotForUs:
    return NotForUs(exc.reason, exc.detail or ladder.MESSAGES.get(exc.code, "refused"))


def check_deposit(key: SigningKey, *, sender: str, from_enc: str, blob: str,
                  now: int, pins: KeyStatePinStore | None = None) -> Arrival:
    """The verified ``Arrival`` of one deposit (channel still ``door``: the caller says
    ``relay``), or ``NotForUs``."""
    from muretai_cli.seam import open_box

    plain = open_box(key, from_enc, blob, ad=b"")
    if plain is None:
        raise NotForUs("cannot-open", "the blob does not open with this identity's key and "
                                      "the depositor's enc_pub")
    try:
        doc = ladder.parse_request(plain)
        if "jsonrpc" not in doc and doc.get("method") == "onboard/claim":
            raise ClaimDeposit(doc)  # the bare claim object (the seam's claim vectors' shape)
        method, params = ladder.rpc_shape(doc)
        if method == "onboard/claim":
            raise ClaimDeposit(params)
        if method in ("introduce/propose", "introduce/respond"):
            raise VouchDeposit(method, params)
        if method != "message/send":
            raise NotForUs("not-message-send", f"the request is {method}, not message/send")
        arrival = read_message(params, me=key.did, now=now, window=RELAYED_WINDOW,
                               signer=sender)
        pinned = None if pins is None or arrival.keystate is None else \
            pins.get_text(arrival.sender)
        adopt = arrival.verify(pinned=pinned, now=now)
        if adopt is not None and pins is not None:
            pins.offer(adopt, now)
    except RpcError as exc:
        raise _rung(exc) from None
    return arrival


def receive(store: IdentityStore, key: SigningKey, policy: Policy, *, deposit_id: str,
            sender: str, from_enc: str, blob: str, now: int,
            gate: Callable[[str], dict[str, Any]] | None = None,
            seen: bool | None = None, received: int | None = None,
            book: VouchBook = NO_VOUCH_BOOK) -> Received:
    """Take one deposit in: commit it (inbox or held) or say why not. Never raises for
    what the deposit holds; a database failure is raised (never made a refusal: the
    caller commits nothing and acknowledges nothing, so the relay gives it again).
    ``seen``: whether the deposit is committed already, when the caller looked it up for
    a whole listen answer (``IdentityStore.deposits_seen``); None looks it up here.
    ``received``: when the relay says it took the deposit (a claim is judged as of then).
    ``book``: the trust gate's revocations and proposals (``inbox/vouches``)."""
    from muretai_cli.db import DatabaseUnavailable

    if store.deposit_seen(sender, deposit_id) if seen is None else seen:
        return Received("duplicate")
    try:
        arrival = check_deposit(key, sender=sender, from_enc=from_enc, blob=blob, now=now,
                                pins=KeyStatePinStore(store.db))
        stored, status = store.relayed_lookup(arrival.sender, arrival.message_id)
        if stored:
            raise NotForUs("replay", "a message with this messageId from this sender is "
                                     "already in the store")
    except DatabaseUnavailable:
        raise
    except ClaimDeposit as claim:
        return _claim(store, key, claim.params, sender=sender, deposit_id=deposit_id, now=now,
                      received=received)
    except VouchDeposit as deposit:
        return _vouch(store, key, deposit, sender=sender, deposit_id=deposit_id, now=now)
    except NotForUs as exc:
        return _refused(store, sender, deposit_id, exc.reason, exc.detail, now)
    except MuretaiError as exc:  # pragma: no cover - every rung above raises NotForUs
        return _refused(store, sender, deposit_id, exc.code, exc.detail[:200], now)
    relayed = replace(arrival, channel="relay", deposit_id=deposit_id,
                      reply_to=proved_reply_to(store, key.did, arrival, arrival.reply_hint))
    try:
        consent.admit(store, policy, relayed, status, now,
                      gate=gate or (lambda rid: {"requestId": rid}), book=book)
    except RpcError as exc:
        if exc.code == Code.AWAITING_APPROVAL and exc.data is not None:
            return Received("held", request_id=str(exc.data.get("requestId")))
        if exc.reason == "replay":
            return Received("duplicate")
        return _refused(store, sender, deposit_id, exc.reason,
                        ladder.MESSAGES.get(exc.code, "refused"), now)
    return Received("accepted")
