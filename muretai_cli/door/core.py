"""The door: its card, its ladder and its policy, independent of HTTP.

``Door.handle_post(raw)`` takes the bytes of one POST body and returns ``(status, body,
headers)``; it never raises. The HTTP layer (``app.py``) only reads bodies and writes answers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from muretai_cli import __version__
from muretai_cli.artifacts.message import REPLY_BINDING
from muretai_cli.db import Batcher, DatabaseUnavailable
from muretai_cli.errors import InputError, MuretaiError
from muretai_cli.inbox import consent, ladder
from muretai_cli.inbox.consent import HELD_CODE, POLICIES, Policy
from muretai_cli.inbox.ladder import RpcError
from muretai_cli.inbox.store import DoorStore, Limits
from muretai_cli.rate import RateLimits
from muretai_cli.transport import IDLE_SECONDS, MAX_CONNECTIONS, MAX_PER_CLIENT

if TYPE_CHECKING:
    from muretai_cli.door.respond import OnMessage, Outcome
    from muretai_cli.door.wba import WbaVerdict
    from muretai_cli.seam import SigningKey
    from muretai_cli.urls import BaseUrl

RESIGN_EVERY = 3600
PROTOCOL_VERSION = "0.2"
SCHEME = "did-key-ed25519"
JSON_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-type", b"application/json; charset=utf-8"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"no-store"),
)
log = logging.getLogger("uvicorn.error")
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


@dataclass(frozen=True)
class DoorConfig:
    """How a door runs. Valid on construction: a bad value is the project's ``InputError``
    naming the setting, so an invalid config never exists."""

    name: str
    url: BaseUrl
    policy: Policy = "quarantine"
    rate_per_sender: int = 60
    rate_total: int = 600
    org: dict[str, Any] | None = None
    durable: bool = False
    slow_seconds: float = 10.0
    max_connections: int = MAX_CONNECTIONS  # see transport.server.Admission
    max_per_client: int = MAX_PER_CLIENT
    idle_seconds: float = IDLE_SECONDS
    shared_rate: bool = False  # count rates in the store (several processes) not in memory
    did_configuration: bytes | None = None  # served at /.well-known/did-configuration.json
    wba_allow_private: bool = False  # fetch visitors' key directories from private addresses
    prefer: tuple[str | dict[str, str], ...] = ()  # agentEntry.prefer (door/publish.py)
    skills: tuple[dict[str, Any], ...] = ()  # the owner's own A2A skills (door/publish.py)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise InputError("bad-policy", f"--dm-policy {str(self.policy)[:40]!r} is not a "
                                           "policy", hint="use open, quarantine or closed")
        for name, value in (("--rate-per-sender", self.rate_per_sender),
                            ("--rate-total", self.rate_total),
                            ("--max-connections", self.max_connections),
                            ("--max-per-client", self.max_per_client)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError("bad-limit", f"{name} {value!r} is not a whole number >= 0 "
                                              "(0 disables)")
        for name, seconds in (("--slow-seconds", self.slow_seconds),
                              ("--idle-seconds", self.idle_seconds)):
            if not seconds > 0:
                raise InputError("bad-limit", f"{name} {seconds!r} must be more than 0")
        if not self.name:
            raise InputError("bad-name", "a door needs a name")


Answer = tuple[int, bytes, tuple[tuple[bytes, bytes], ...]]


@dataclass(frozen=True)
class Delivered:
    """A ``message/send`` consent delivered to the inbox just now (not held, refused or a
    repeat), with the answer it was given: what ``--on-message`` may answer instead."""

    answer: Answer
    rid: Any
    message: dict[str, Any]  # the verified six fields, sig and proved replyTo


# contact/redeem refusals by the artifact's reason: JSON-RPC codes (default -32001).
_REDEEM_CODES = {"malformed-grant": -32602, "grant-for-other-did": -32011, "stale": -32002,
                 "from-the-future": -32002}
# The database is away: HTTP 503, a JSON-RPC error, retry in a second.
UNAVAILABLE: Answer = (503, _dumps({"jsonrpc": "2.0", "id": None, "error": {
    "code": -32603, "message": "Service unavailable",
    "data": {"reason": "database-unavailable", "retryAfter": 1}}}).encode(),
    (*JSON_HEADERS, (b"retry-after", b"1")))


class SharedRateLimits:
    """The door's two ceilings counted in its store, so every process serving the identity
    shares them (a fixed one-minute window; see ``DoorStore.take_rate``)."""

    TOTAL = "*"  # the whole door's bucket (no DID is a bare asterisk)

    def __init__(self, store: DoorStore, per_sender: int, total: int) -> None:
        self.store = store
        self.per_sender = per_sender
        self.total_rate = total

    def limits(self, sender: str) -> list[tuple[str, int]]:
        """The ``(bucket, per_minute)`` a request from ``sender`` counts against."""
        return [(key, n) for key, n in ((sender, self.per_sender), (self.TOTAL,
                                                                   self.total_rate)) if n > 0]

    def check(self, sender: str, now: float) -> int:
        """0 if allowed (and counted), else whole seconds to wait (for ``Retry-After``)."""
        limits = self.limits(sender)
        return self.store.take_rate(limits, int(now)) if limits else 0


T = TypeVar("T")


class InPlace:
    """The door's store calls made where they are asked: on SQLite's event loop (one
    connection, one writer), in a command, in a test. Nothing here waits."""

    async def lookup(self, store: DoorStore, message_id: str, sender: str, now: int
                     ) -> tuple[bool, str | None]:
        return store.lookup(message_id, sender, now)

    async def accept(self, store: DoorStore, env: dict[str, Any], now: int, limits: Limits
                     ) -> tuple[bool, int]:
        """Count the request against its shared rate ``limits`` (none: not counted here)
        and, if they admit it, commit the message: ``(accepted, wait)``, as
        ``DoorStore.lookup_and_accept`` gives each accept."""
        return store.lookup_and_accept((), [(env, now, limits)])[1][0]

    async def take_rate(self, store: DoorStore, limits: Limits, now: int) -> int:
        return store.take_rate(limits, now)

    async def call(self, work: Callable[[], T]) -> T:
        return work()


IN_PLACE = InPlace()


@dataclass(frozen=True, slots=True)
class _Lookup:
    message_id: str
    sender: str
    now: int


@dataclass(frozen=True, slots=True)
class _Accept:
    env: dict[str, Any]
    now: int
    limits: Limits


class Grouped(InPlace):
    """A shared store's calls (PostgreSQL) from the event loop. The hot path's two (the
    replay and sender lookup before the signature; the rate count and commit after it)
    join one group commit: every lookup, count and commit waiting go to the database
    together, a statement each, the commits in one transaction with one disk flush
    (``db.Batcher``, ``DoorStore.lookup_and_accept``). Anything else runs on the door's
    threads."""

    def __init__(self, store: DoorStore, threads: ThreadPoolExecutor) -> None:
        self.threads = threads
        self.store = store
        self.batches: Batcher[_Lookup | _Accept, tuple[bool, str | None] | tuple[bool, int]] = \
            Batcher(self._run, name="door-commits")
        # rate counts taken before the policy's store calls, a batch at a time (take_rates)
        self.rates: Batcher[tuple[Limits, int], int] = Batcher(store.take_rates,
                                                               name="door-rates")

    def _run(self, items: list[_Lookup | _Accept]
             ) -> list[tuple[bool, str | None] | tuple[bool, int]]:
        """A batch's results in its order: a lookup's (seen, status), an accept's
        (accepted, wait)."""
        lookups = [(i.message_id, i.sender, i.now) for i in items if isinstance(i, _Lookup)]
        accepts = [(i.env, i.now, i.limits) for i in items if isinstance(i, _Accept)]
        looked, accepted = self.store.lookup_and_accept(lookups, accepts)
        done_l, done_a = iter(looked), iter(accepted)
        return [next(done_l) if isinstance(item, _Lookup) else next(done_a) for item in items]

    async def lookup(self, store: DoorStore, message_id: str, sender: str, now: int
                     ) -> tuple[bool, str | None]:
        seen, status = await self.batches.submit(_Lookup(message_id, sender, now))
        return bool(seen), None if status is None else str(status)

    async def accept(self, store: DoorStore, env: dict[str, Any], now: int, limits: Limits
                     ) -> tuple[bool, int]:
        accepted, wait = await self.batches.submit(_Accept(env, now, limits))
        return bool(accepted), int(wait or 0)

    async def take_rate(self, store: DoorStore, limits: Limits, now: int) -> int:
        return await self.rates.submit((limits, now))

    async def call(self, work: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.threads, work)

    def close(self) -> None:
        self.batches.close()
        self.rates.close()


def at_once(work: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never waits (its store calls made ``IN_PLACE``)."""
    try:
        work.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    work.close()
    raise RuntimeError("a store call waited outside the event loop")


class Door:
    """One identity's door: a signing key, a store, rate limits and the cached card."""

    def __init__(self, key: SigningKey, config: DoorConfig, store: DoorStore, *,
                 clock: Callable[[], float] = time.time,
                 on_event: Callable[[dict[str, Any]], None] | None = None,
                 on_message: OnMessage | None = None) -> None:
        self.key = key
        self.on_event = on_event  # told of each arrival's outcome (serve logs it)
        self.on_message = on_message  # answers delivered messages (door/respond.py)
        self.did = key.did
        self.config = config
        self._wba: tuple[int, bytes, tuple[tuple[bytes, bytes], ...]] | None = None
        self.store = store
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
        self.origin = config.url.origin
        self._card_rev: str | None = None
        self._card_bytes = b""
        self._card_exp = 0
        self._env_bytes = b""
        self._env_ts = 0
        self._last_prune = 0
        endpoint = config.url.text if config.url.path else config.url.origin + "/"
        self.terms = terms(self.did, endpoint, config.policy)

    # -- the card ----------------------------------------------------------------------
    def card(self, now: int) -> dict[str, Any]:
        grant = self.store.card_grant(now)
        open_door = self.config.policy == "open"
        card: dict[str, Any] = {
            "name": self.config.name,
            "description": "A muretai door: signed A2A messages (six fields, Ed25519, did:key).",
            "url": self.config.url.text,
            "did": self.did,
            "version": __version__,
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"streaming": False, "pushNotifications": False},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{
                "id": "dm", "name": "signed-direct-message",
                "description": "Send a signed message/send; the answer is a signed reply. "
                               f"Policy: {self.config.policy}.",
                "tags": ["dm", "signed", "did:key"],
            }],
            "agentEntry": {"open_door": open_door},
            "muretai": {"open_door": open_door, "dmPolicy": self.config.policy,
                        "methods": list(ladder.METHODS), "replyBinding": REPLY_BINDING},
        }
        card["securitySchemes"] = {SCHEME: {
            "type": SCHEME,
            "description": "Sign every message/send with an Ed25519 did:key over the six "
                           "fields; the recipe is under agentEntry beside this line.",
            "agentEntry": self.terms,
        }}
        card["security"] = [{SCHEME: []}]
        _publish(card, self.config, self.terms["endpoint"])
        if grant is not None:
            card["contact"] = grant.doc
        if self.config.org is not None:
            card["org"] = self.config.org
        return card

    def _refresh(self, now: int) -> None:
        """Rebuild the card when it changed, re-sign it then and at most hourly otherwise.

        With the database away, the card already signed is served as it is (its envelope
        stays valid for a while); without one, ``DatabaseUnavailable`` reaches the caller.
        """
        try:
            rev = self.store.card_revision()
        except DatabaseUnavailable:
            if self._card_bytes:
                return
            raise
        if rev != self._card_rev or (self._card_exp and now >= self._card_exp):
            from muretai_cli.seam import canonical_bytes

            card = self.card(now)
            contact = card.get("contact")
            self._card_exp = int(contact["exp"]) if contact else 0
            body = canonical_bytes(card)
            self._card_rev = rev
            if body != self._card_bytes:
                self._card_bytes = body
                self._sign(card, now)
                return
        if now - self._env_ts >= RESIGN_EVERY:
            from muretai_cli.seam import parse_document

            self._sign(parse_document(self._card_bytes), now)

    def _sign(self, card: dict[str, Any], now: int) -> None:
        from muretai_cli.seam import canonical_bytes, sign_card_envelope

        self._env_bytes = canonical_bytes(sign_card_envelope(self.key, card, now))
        self._env_ts = now

    def wba_directory(self) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
        """This identity's Web Bot Auth key directory, signed over the door's own @authority
        (seam §8) and re-signed hourly: ``(body, headers)``."""
        from muretai_cli.seam import authority_of, sign_directory

        now = int(self.clock())
        if self._wba is None or now - self._wba[0] >= RESIGN_EVERY:
            body, signed = sign_directory(self.key, authority_of(self.origin), created=now)
            headers = tuple((k.lower().encode(), v.encode()) for k, v in signed.items())
            self._wba = (now, body, (*headers, (b"access-control-allow-origin", b"*"),
                                     (b"cache-control", b"max-age=300")))
        return self._wba[1], self._wba[2]

    def card_bytes(self) -> bytes:
        self._refresh(int(self.clock()))
        return self._card_bytes

    def envelope_bytes(self) -> bytes:
        self._refresh(int(self.clock()))
        return self._env_bytes

    # -- a POST --------------------------------------------------------------------------
    def handle_post(self, raw: bytes, wba: WbaVerdict | None = None) -> Answer:
        """One POST body to one HTTP answer. Never raises; -32603 at worst."""
        return self.receive(raw, wba)[0]

    def receive(self, raw: bytes, wba: WbaVerdict | None = None
                ) -> tuple[Answer, Delivered | None]:
        """One POST body to its answer, and the message it delivered (None if it delivered
        nothing new). Never raises; -32603 at worst.

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
                    "error": {"code": -32603, "message": "Internal error"}}
            return (200, _dumps(body).encode(), JSON_HEADERS), None

    def answered(self, delivered: Delivered, outcome: Outcome) -> Answer:
        """The answer to a delivered message once ``--on-message`` ran: a reply signed over
        its text (kept for an exact repeat), else the receipt already made, with a warning
        when CMD failed. Never raises: the receipt at worst."""
        fields = delivered.message
        facts: dict[str, Any] = {"by": "receipt"}
        answer = delivered.answer
        try:
            if outcome.text is not None:
                reply = self._reply(fields, outcome.text, int(self.clock()))
                signed = _result(delivered.rid, reply)
                self.store.keep_reply(fields["from"], fields["messageId"], _dumps(reply))
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
            "messageId": fields["messageId"], "metadata": {"from": fields["from"]}}}, **facts)
        return answer

    def _tell(self, event: str, method: str | None, params: object, **facts: Any) -> None:
        """Tell ``on_event`` of an arrival: what came (method, claimed sender, messageId) and
        what became of it. Sender and messageId are as claimed: verified only if accepted."""
        if self.on_event is None:
            return
        meta: Any = {}
        message: Any = params.get("message") if isinstance(params, dict) else None
        if isinstance(message, dict):
            meta = message.get("metadata") or {}
        sender = (meta.get("from") if isinstance(meta, dict) else None) or (
            params.get("from") if isinstance(params, dict) else None) or (
            message.get("from") if isinstance(message, dict) else None)  # an onboard/claim
        message_id = message.get("messageId") if isinstance(message, dict) else None
        try:
            self.on_event({"event": event, "time": int(self.clock()), "method": method,
                           "from": sender if isinstance(sender, str) else None,
                           "messageId": message_id if isinstance(message_id, str) else None,
                           **facts})
        except Exception:  # a logging hook must never change the answer
            log.exception("door: the event hook failed")

    def _tell_refusal(self, err: RpcError, doc: dict[str, Any] | None,
                      found: dict[str, Any]) -> None:
        method = doc.get("method") if doc is not None else None
        params = doc.get("params") if doc is not None else None
        data = err.data or {}
        if err.code == HELD_CODE:
            self._tell("held", method if isinstance(method, str) else None, params,
                       requestId=data.get("requestId"), **found)
        else:
            self._tell("refused", method if isinstance(method, str) else None, params,
                       code=err.code, reason=data.get("reason", err.reason), **found)

    def _rate(self, sender: str, now: float) -> None:
        self._refuse_rate(self.rate.check(sender, now))

    @staticmethod
    def _refuse_rate(wait: int) -> None:
        if wait:
            raise RpcError(-32004, "rate-limited", status=429,
                           data={"reason": "rate-limited", "retryAfter": wait},
                           headers=((b"retry-after", str(wait).encode()),))

    async def _message(self, params: dict[str, Any], now: int, wba: dict[str, Any] | None,
                       io: InPlace) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The reply to a message/send, and the message if consent delivered it now."""
        env = ladder.a2a_message(params)
        ladder.text_size(env["text"])
        fields = ladder.six(env, self.terms)
        ladder.recipient(fields, self.did)
        ladder.fresh(fields["timestamp"], now)
        store = self.store
        seen, status = await io.lookup(store, fields["messageId"], fields["from"], now)
        if seen:
            # An exact repeat of an accepted message (a visitor whose answer was lost) gets
            # the reply it was given, marked recovered; nothing is delivered twice.
            kept = await io.call(lambda: store.kept_reply({**fields, "sig": env["sig"]}))
            if kept is None:
                raise RpcError(-32002, "replay")
            kept.setdefault("metadata", {})["recovered"] = True
            return kept, None
        ladder.signature(fields, env["sig"])
        # Shared rate counts (several processes) are store calls: counted with the commit
        # (one transaction) unless the policy's own store calls (a hold) come first.
        limits: Limits = []
        if isinstance(self.rate, SharedRateLimits):
            limits = self.rate.limits(fields["from"])
        else:
            self._rate(fields["from"], self.clock())
        fields["sig"] = env["sig"]
        reply = self._reply(fields, f"accepted: delivered to {self.config.name}'s inbox", now)
        from muretai_cli.inbox.relayed import proved_reply_to

        hint = env["replyTo"]
        admitted = {**fields, "relay": env["relay"], "reply": _dumps(reply),
                    "replyTo": None if hint is None else await io.call(
                        lambda: proved_reply_to(store, self.did, fields, hint)),
                    "wba": _dumps(wba) if wba is not None else None}
        policy = self.config.policy
        if consent.consults_store(policy, status):
            if limits:  # counted before a hold: a flood of strangers is limited too
                self._refuse_rate(await io.take_rate(store, limits, now))
                limits = []
            await io.call(lambda: consent.judge(store, policy, admitted, status, now,
                                                gate=self._gate))
        else:
            try:
                consent.judge(store, policy, admitted, status, now, gate=self._gate)
            except RpcError:  # a refusal is counted too, as every verified request is
                if limits:
                    self._refuse_rate(await io.take_rate(store, limits, now))
                raise
        accepted, wait = await io.accept(store, admitted, now, limits)
        self._refuse_rate(wait)
        if not accepted:
            raise RpcError(-32002, "replay")
        if now - self._last_prune > 60:
            self._last_prune = now
            await io.call(lambda: store.prune(now))
        from muretai_cli.seam import SIGNED_FIELDS

        message = {k: admitted[k] for k in (*SIGNED_FIELDS, "sig", "replyTo")}
        return reply, message

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

    def _reply(self, env: dict[str, Any], text: str, now: int) -> dict[str, Any]:
        from muretai_cli.artifacts.message import reply_message_id, signed_message

        # The reply's signed messageId and contextId bind it to the request it answers.
        message = signed_message(self.key, to=env["from"],
                                 text=text,
                                 now=now, context_id=env["contextId"],
                                 role="agent", reply_to=env["messageId"],
                                 message_id=reply_message_id(env["from"], env["messageId"]))
        message["contextId"] = env["contextId"]
        return message

    # -- contact/redeem --------------------------------------------------------------------
    def _redeem(self, params: dict[str, Any], now: int) -> dict[str, Any]:
        from muretai_cli.artifacts.grant import check_grant, check_redeemer

        try:
            grant, sender = check_redeemer(params, door_did=self.did, now=now)
        except MuretaiError as exc:
            raise ladder.refused(_REDEEM_CODES.get(exc.code, -32001), exc) from None
        self._rate(sender, self.clock())
        if self.store.sender_status(sender) == "blocked":
            raise RpcError(-32010, "blocked")
        try:
            checked = check_grant(grant, for_did=self.did, now=now)
            stored = self.store.grant(checked["id"])
            if stored is None or stored.doc.get("sig") != checked.get("sig"):
                raise RpcError(-32011, "unknown-grant")
            expires = self.store.redeem(checked["id"], sender, now)
        except DatabaseUnavailable:
            raise
        except MuretaiError as exc:
            raise ladder.refused(-32011, exc) from None
        return {"ok": True, "expires": expires, "grantId": checked["id"]}


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


def _publish(card: dict[str, Any], config: DoorConfig, endpoint: str) -> None:
    """The card's published extras: the owner's skills, declared order and interfaces."""
    from muretai_cli.door.publish import supported_interfaces

    card["skills"].extend(dict(s) for s in config.skills)
    if config.prefer:
        card["agentEntry"]["prefer"] = [p if isinstance(p, str) else dict(p)
                                        for p in config.prefer]
    card["supportedInterfaces"] = supported_interfaces(endpoint, PROTOCOL_VERSION)


def _result(rid: Any, result: dict[str, Any]) -> Answer:
    return 200, _dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode(), JSON_HEADERS


def terms(did: str, endpoint: str, policy: str) -> dict[str, Any]:
    """The door's terms, published on the card and returned to a keyless walk-in (one object)."""
    from muretai_cli.seam import MESSAGE_WINDOW

    return {
        "scheme": SCHEME,
        "instruction": "Make an Ed25519 key pair (any crypto library), derive your did:key, "
                       "sign the six fields below and POST the request shown in "
                       "exampleRequest to endpoint. No account is needed. This door's "
                       f"policy is {policy}: a new sender may need a contact grant "
                       "(contact/redeem) or the owner's approval.",
        "in": "params.message.metadata",
        "endpoint": endpoint,
        "recipient": did,
        "identity": "metadata.from = did:key:z + base58btc(0xed01 followed by the 32-byte "
                    "Ed25519 public key)",
        "signedFields": ["contextId", "from", "messageId", "text", "timestamp", "to"],
        "canonicalization": "A JSON object of exactly the six fields, keys sorted by code "
                            "point, separators ',' and ':', no whitespace, non-ASCII as is, "
                            "UTF-8; contextId is null when there is no conversation yet, and "
                            "is still signed.",
        "signature": "metadata.sig = standard padded base64 of the 64-byte Ed25519 signature "
                     "over those bytes",
        "timestamp": f"metadata.timestamp = integer epoch seconds, within {MESSAGE_WINDOW} s "
                     "of this door's clock",
        "exampleRequest": {
            "jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": {
                "kind": "message", "role": "user", "messageId": "<a fresh unique id>",
                "contextId": None, "parts": [{"kind": "text", "text": "<your message>"}],
                "metadata": {"from": "<your did:key>", "to": did,
                             "timestamp": "<integer epoch seconds, a JSON number>",
                             "sig": "<base64 signature over the six fields>"}}},
        },
    }
