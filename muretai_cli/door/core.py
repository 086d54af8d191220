"""The door: its ladder and its policy, independent of HTTP.

``Door.handle_post(raw)`` takes the bytes of one POST body and returns ``(status, body,
headers)``; it never raises. The HTTP layer (``app.py``) only reads bodies and writes answers.
Beside it: ``config`` (DoorConfig), ``card`` (the card, its envelope and terms),
``executors`` (where store calls run), ``events`` (the ``on_event`` hook).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from muretai_cli.db import DatabaseUnavailable
from muretai_cli.door import events
from muretai_cli.door.card import PublishedCard
from muretai_cli.door.config import DoorConfig
from muretai_cli.door.executors import IN_PLACE, Grouped, InPlace, SharedRateLimits, at_once
from muretai_cli.errors import MuretaiError
from muretai_cli.inbox import consent, ladder
from muretai_cli.inbox.arrival import DOOR_WINDOW, Arrival, read_message
from muretai_cli.inbox.ladder import Code, RpcError
from muretai_cli.inbox.store import IdentityStore, Limits
from muretai_cli.inbox.store.keystate_pins import KeyStatePinStore
from muretai_cli.inbox.vouches import VouchBook
from muretai_cli.transport.rate import RateLimits

if TYPE_CHECKING:
    from muretai_cli.door.respond import OnMessage, Outcome
    from muretai_cli.door.wba import WbaVerdict
    from muretai_cli.seam import SigningKey

__all__ = ["JSON_HEADERS", "UNAVAILABLE", "Answer", "Delivered", "Door", "DoorConfig", "log"]

JSON_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-type", b"application/json; charset=utf-8"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"no-store"),
)
log = logging.getLogger("uvicorn.error")
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


Answer = tuple[int, bytes, tuple[tuple[bytes, bytes], ...]]


@dataclass(frozen=True)
class Delivered:
    """A ``message/send`` consent delivered to the inbox just now (not held, refused or a
    repeat), with the answer it was given: what ``--on-message`` may answer instead."""

    answer: Answer
    rid: Any
    arrival: Arrival  # as it was committed: verified, its replyTo proved

    @property
    def message(self) -> dict[str, Any]:
        """What ``--on-message`` is given: the verified six fields, sig and proved replyTo."""
        return self.arrival.to_json()


# contact/redeem refusals by the artifact's reason: JSON-RPC codes (default: the signature's).
_REDEEM_CODES = {"malformed-grant": Code.INVALID_PARAMS, "grant-for-other-did": Code.GRANT_REFUSED,
                 "stale": Code.REPLAY_OR_STALE, "from-the-future": Code.REPLAY_OR_STALE}
# The database is away: HTTP 503, a JSON-RPC error, retry in a second.
UNAVAILABLE: Answer = (503, _dumps({"jsonrpc": "2.0", "id": None, "error": {
    "code": int(Code.INTERNAL_ERROR), "message": "Service unavailable",
    "data": {"reason": "database-unavailable", "retryAfter": 1}}}).encode(),
    (*JSON_HEADERS, (b"retry-after", b"1")))



class Door:
    """One identity's door: a signing key, a store, rate limits and the cached card."""

    def __init__(self, key: SigningKey, config: DoorConfig, store: IdentityStore, *,
                 clock: Callable[[], float] = time.time,
                 on_event: Callable[[dict[str, Any]], None] | None = None,
                 on_message: OnMessage | None = None) -> None:
        self.key = key
        self.on_event = on_event  # told of each arrival's outcome (serve logs it)
        self.on_message = on_message  # answers delivered messages (door/respond.py)
        self.did = key.did
        self.config = config
        self.store = store
        self.pins = KeyStatePinStore(store.db)  # what each sender's KeyState was, kept
        from muretai_cli.inbox.revocations import vouch_book

        # The trust gate's proposals and revocations; issuers' lists fetched on a thread.
        self.vouches: VouchBook = vouch_book(store, key.did, background=True)
        self.clock = clock
        # On a store that takes several connections (PostgreSQL), POSTs from the event loop
        # look up and commit in group commits, and the rest of their store calls run on
        # threads; on SQLite (one connection, one writer) all of it runs on the loop itself.
        self.offload: ThreadPoolExecutor | None = None
        self.grouped: Grouped | None = None
        if store.db.connections > 1:
            self.offload = ThreadPoolExecutor(store.db.connections, thread_name_prefix="door")
            self.grouped = Grouped(store, self.offload)
        self.rate: RateLimits | SharedRateLimits = (
            SharedRateLimits(store, config.rate_per_sender, config.rate_total)
            if config.shared_rate else RateLimits(config.rate_per_sender, config.rate_total))
        # late-bound: what builds the card is the door's ``card`` as it is when called
        self.published = PublishedCard(key, config, store, clock,
                                       build=lambda now: self.card(now))  # noqa: PLW0108
        self.origin = config.url.origin
        self.terms = self.published.terms
        self._last_prune = 0
        self._revocations: tuple[tuple[str, ...], int, bytes] | None = None

    # -- the card (``card.PublishedCard``) -----------------------------------------------
    def card(self, now: int) -> dict[str, Any]:
        return self.published.card(now)

    def wba_directory(self) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
        return self.published.wba_directory()

    def card_bytes(self) -> bytes:
        return self.published.card_bytes()

    def envelope_bytes(self) -> bytes:
        return self.published.envelope_bytes()

    def revocations_bytes(self) -> bytes:
        """This identity's signed revocation list (``inbox.proposals.signed_revocations``),
        re-signed when the ids change and hourly, not per GET."""
        from muretai_cli.door.card import RESIGN_EVERY
        from muretai_cli.inbox.proposals import ProposalBook, signed_revocations

        now = int(self.clock())
        ids = tuple(ProposalBook(self.store.db).revoked_ids())
        kept = self._revocations
        if kept is None or kept[0] != ids or now - kept[1] >= RESIGN_EVERY:
            kept = self._revocations = (ids, now, _dumps(
                signed_revocations(self.key, ids, now)).encode())
        return kept[2]

    # -- a POST --------------------------------------------------------------------------
    def handle_post(self, raw: bytes, wba: WbaVerdict | None = None) -> Answer:
        """One POST body to one HTTP answer. Never raises; an internal error at worst."""
        return self.receive(raw, wba)[0]

    def receive(self, raw: bytes, wba: WbaVerdict | None = None
                ) -> tuple[Answer, Delivered | None]:
        """One POST body to its answer, and the message it delivered (None if it delivered
        nothing new). Never raises; an internal error at worst.

        ``wba`` is the Web Bot Auth verdict on the request that carried it (when signed):
        kept with the message and told in the events, never a reason to admit or refuse.
        Store calls are made in place (see ``receive_async`` for a server's)."""
        return at_once(self._receive(raw, wba, IN_PLACE))

    async def receive_async(self, raw: bytes, wba: WbaVerdict | None = None
                            ) -> tuple[Answer, Delivered | None]:
        """``receive`` on the event loop: on a shared store its lookup and commit join the
        loop's group commits and its other store calls run on threads; on SQLite it runs
        in place, as ``receive``."""
        return await self._receive(raw, wba, self.grouped or IN_PLACE)

    def close(self) -> None:
        """Stop the group commits and threads (what is queued runs first), close the store."""
        if self.grouped is not None:
            self.grouped.close()
        if self.offload is not None:
            self.offload.shutdown(wait=True)
        self.store.close()

    async def _receive(self, raw: bytes, wba: WbaVerdict | None, io: InPlace
                       ) -> tuple[Answer, Delivered | None]:
        rid: Any = None
        doc: Any = None
        found = {"wba": wba.to_json()} if wba is not None else {}
        try:
            doc = ladder.parse_request(raw)
            rid = ladder.safe_id(doc.get("id"))
            method, params = ladder.rpc_shape(doc)
            now = int(self.clock())
            delivered = None
            if method == "message/send":
                result, delivered = await self._message(params, now, found.get("wba"), io)
            elif method == "onboard/claim":
                result = await io.call(lambda: self._claim(params, now))
            elif method.startswith("introduce/"):
                result = await io.call(lambda: self._vouch(method, params, now))
            else:
                result = await io.call(lambda: self._redeem(params, now))
            self._tell("accepted", method, params, **found)
            answer = _result(rid, result)
            return answer, Delivered(answer, rid, delivered) if delivered else None
        except RpcError as err:
            self._tell_refusal(err, doc if isinstance(doc, dict) else None, found)
            body = {"jsonrpc": "2.0", "id": rid, "error": err.error_object()}
            return (err.status, _dumps(body).encode(), JSON_HEADERS + err.headers), None
        except DatabaseUnavailable as exc:
            # Nothing was committed (or the commit's fate is unknown): never a signed reply.
            log.warning("door: database unavailable: %s", exc.detail)
            return UNAVAILABLE, None
        except Exception:
            log.exception("door: internal error answering a POST")
            body = {"jsonrpc": "2.0", "id": rid,
                    "error": {"code": int(Code.INTERNAL_ERROR), "message": "Internal error"}}
            return (200, _dumps(body).encode(), JSON_HEADERS), None

    def answered(self, delivered: Delivered, outcome: Outcome) -> Answer:
        """The answer to a delivered message once ``--on-message`` ran: a reply signed over
        its text (kept for an exact repeat), else the receipt already made, with a warning
        when CMD failed. Never raises: the receipt at worst."""
        arrival = delivered.arrival
        facts: dict[str, Any] = {"by": "receipt"}
        answer = delivered.answer
        try:
            if outcome.text is not None:
                reply = self._reply(arrival, outcome.text, int(self.clock()))
                signed = _result(delivered.rid, reply)
                self.store.keep_reply(arrival.sender, arrival.message_id, _dumps(reply))
                answer, facts = signed, {"by": "on-message"}
            elif outcome.code is not None:
                facts["warning"] = {"code": outcome.code, "message": outcome.message}
        except Exception as exc:  # the receipt stands; the owner is told why
            log.warning("door: on-message reply not kept: %s", exc)
            answer = delivered.answer
            facts = {"by": "receipt", "warning": {"code": "not-kept",
                                                  "message": "the reply could not be kept"}}
        if self.on_event is None and "warning" in facts:
            log.warning("door: on-message %s: %s", outcome.code, outcome.message)
        self._tell("answered", "message/send", {"message": {
            "messageId": arrival.message_id, "metadata": {"from": arrival.sender}}}, **facts)
        return answer

    def _tell(self, event: str, method: str | None, params: object, **facts: Any) -> None:
        events.tell(self.on_event, int(self.clock()), event, method, params, **facts)

    def _tell_refusal(self, err: RpcError, doc: dict[str, Any] | None,
                      found: dict[str, Any]) -> None:
        events.tell_refusal(self.on_event, int(self.clock()), err, doc, found)

    def _rate(self, sender: str, now: float) -> None:
        self._refuse_rate(self.rate.check(sender, now))

    @staticmethod
    def _refuse_rate(wait: int) -> None:
        if wait:
            raise RpcError(Code.RATE_LIMITED, "rate-limited", status=429,
                           data={"reason": "rate-limited", "retryAfter": wait},
                           headers=((b"retry-after", str(wait).encode()),))

    async def _message(self, params: dict[str, Any], now: int, wba: dict[str, Any] | None,
                       io: InPlace) -> tuple[dict[str, Any], Arrival | None]:
        """The reply to a message/send, and the message if consent delivered it now."""
        arrival = read_message(params, me=self.did, now=now, window=DOOR_WINDOW,
                               terms=self.terms)
        store = self.store
        seen, status = await io.lookup(store, arrival.message_id, arrival.sender, now)
        if seen:
            # An exact repeat of an accepted message (a visitor whose answer was lost) gets
            # the reply it was given, marked recovered; nothing is delivered twice.
            kept = await io.call(lambda: store.kept_reply(arrival))
            if kept is None:
                raise RpcError(Code.REPLAY_OR_STALE, "replay")
            kept.setdefault("metadata", {})["recovered"] = True
            return kept, None
        pinned = None if arrival.keystate is None else await io.call(
            lambda: self.pins.get_text(arrival.sender))
        adopt = arrival.verify(pinned=pinned, now=now)  # the root's key, or its op key's
        if adopt is not None:
            await io.call(lambda: self.pins.offer(adopt, now))
        # Shared rate counts (several processes) are store calls: counted with the commit
        # (one transaction) unless the policy's own store calls (a hold) come first.
        limits: Limits = []
        if isinstance(self.rate, SharedRateLimits):
            limits = self.rate.limits(arrival.sender)
        else:
            self._rate(arrival.sender, self.clock())
        reply = self._reply(arrival, f"accepted: delivered to {self.config.name}'s inbox", now,
                            receipt=True)
        from muretai_cli.inbox.relayed import proved_reply_to

        hint = arrival.reply_hint
        admitted = replace(
            arrival, reply=_dumps(reply), wba=_dumps(wba) if wba is not None else None,
            reply_to=None if hint is None else await io.call(
                lambda: proved_reply_to(store, self.did, arrival, hint)))
        policy = self.config.policy
        if consent.consults_store(policy, status, admitted):
            if limits:  # counted before a hold: a flood of strangers is limited too
                self._refuse_rate(await io.take_rate(store, limits, now))
                limits = []
            judged = admitted
            admitted = await io.call(lambda: consent.judge(store, policy, judged, status, now,
                                                           gate=self._gate, book=self.vouches))
        else:
            try:
                admitted = consent.judge(store, policy, admitted, status, now,
                                         gate=self._gate, book=self.vouches)
            except RpcError:  # a refusal is counted too, as every verified request is
                if limits:
                    self._refuse_rate(await io.take_rate(store, limits, now))
                raise
        accepted, wait = await io.accept(store, admitted, now, limits)
        self._refuse_rate(wait)
        if not accepted:
            raise RpcError(Code.REPLAY_OR_STALE, "replay")
        if now - self._last_prune > 60:
            self._last_prune = now
            await io.call(lambda: store.prune(now))
        return reply, admitted

    def _gate(self, request_id: str) -> dict[str, Any]:
        """The WebMCP gate shape: what a person must do, and what the agent should do."""
        return {
            "ok": False,
            "needsHumanConfirmation": True,
            "origin": self.origin,
            "requestId": request_id,
            "message": "A new contact wants to message you. Approve or reject it with "
                       f"`muretai op --as {self.config.name} requests`.",
            "agentHint": "Your message is held for the owner's approval. Do not resend it; "
                         "later messages are held too, under this requestId, until a "
                         "decision.",
        }

    def _reply(self, to: Arrival, text: str, now: int, *, receipt: bool = False
               ) -> dict[str, Any]:
        from muretai_cli.artifacts.message import (
            receipt_message_id,
            reply_message_id,
            signed_message,
        )

        # The answer's signed messageId and contextId bind it to the request it answers; the
        # messageId's derivation also says, signed, whether it is the automatic receipt
        # (nobody answered yet) or an answer (--on-message): docs/conversations.md.
        derive = receipt_message_id if receipt else reply_message_id
        message = signed_message(self.key, to=to.sender,
                                 text=text,
                                 now=now, context_id=to.context_id,
                                 role="agent", reply_to=to.message_id,
                                 message_id=derive(to.sender, to.message_id))
        message["contextId"] = to.context_id
        return message

    # -- contact/redeem --------------------------------------------------------------------
    def _redeem(self, params: dict[str, Any], now: int) -> dict[str, Any]:
        from muretai_cli.artifacts.grant import check_redeem

        admitted: list[str] = []  # the redeemer, once its signature verified and it passed

        def admit(sender: str) -> None:  # between the redeemer's half and the grant's
            self._rate(sender, self.clock())
            if self.store.sender_status(sender) == "blocked":
                raise RpcError(Code.INTRODUCTION_REQUIRED, "blocked")
            admitted.append(sender)

        try:
            checked, sender = check_redeem(params, door_did=self.did, now=now, admit=admit)
        except DatabaseUnavailable:
            raise
        except MuretaiError as exc:  # the redeemer's half, or (once admitted) the grant's
            raise ladder.refused(Code.GRANT_REFUSED if admitted else
                                 _REDEEM_CODES.get(exc.code, Code.SIGNATURE), exc) from None
        try:
            stored = self.store.grant(checked.id)
            if stored is None or stored.doc.get("sig") != checked.sig:
                raise RpcError(Code.GRANT_REFUSED, "unknown-grant")
            expires = self.store.redeem(checked.id, sender, now)
        except DatabaseUnavailable:
            raise
        except MuretaiError as exc:
            raise ladder.refused(Code.GRANT_REFUSED, exc) from None
        return {"ok": True, "expires": expires, "grantId": checked.id}


    # -- onboard/claim: the answer to an invite this identity issued (inbox/claims.py) --------
    def _claim(self, params: dict[str, Any], now: int) -> dict[str, Any]:
        from muretai_cli.inbox.claims import process_claim, rpc_code

        try:
            return process_claim(params, me=self.did, store=self.store, now=now,
                                 rate=lambda sender: self._rate(sender, self.clock())
                                 ).to_json()
        except DatabaseUnavailable:
            raise
        except MuretaiError as exc:
            raise ladder.refused(rpc_code(exc.code), exc) from None

    # -- introduce/propose, introduce/respond (inbox/proposals.py) ------------------------
    def _vouch(self, method: str, params: dict[str, Any], now: int) -> dict[str, Any]:
        from muretai_cli.inbox.proposals import receive_proposal, receive_response, rpc_code

        def rate(sender: str) -> None:
            self._rate(sender, self.clock())

        try:
            if method == "introduce/propose":
                return receive_proposal(params, me=self.did, store=self.store, now=now,
                                        rate=rate).to_json()
            return receive_response(params, me=self.did, store=self.store, now=now, rate=rate)
        except DatabaseUnavailable:
            raise
        except MuretaiError as exc:
            raise ladder.refused(rpc_code(exc.code), exc) from None


def _result(rid: Any, result: dict[str, Any]) -> Answer:
    return 200, _dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode(), JSON_HEADERS

