"""The blind relay, independent of HTTP: each route takes body bytes and returns an answer.

The relay checks routing fields and signatures and stores ciphertext. It never opens a box
(it holds no key that could) and never imports the receiving path (``inbox/``): what it
sees is who deposits for whom, when, and how many bytes -- never text.

Every answer is ``(status, JSON body, extra headers)``; a refusal is
``{"error": CODE, "message": TEXT}``. The rungs of each route run in the order of
``docs/relay.md``'s tables, cheapest and unauthenticated first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from muretai_cli.db import Batcher, DatabaseUnavailable, Unstorable
from muretai_cli.errors import MuretaiError
from muretai_cli.relay.answers import (
    JSON_HEADERS,
    Answer,
    Refusal,
    did_field,
    did_problem,
    encode_json,
    int_field,
    json_object,
    malformed,
    ok,
    refusal_answer,
    str_field,
)
from muretai_cli.relay.limits import (
    CORRESPONDENTS,
    HELD_PER_DID,
    HELD_REFRESH,
    ID_FORBIDDEN,
    MAX_ACK_IDS,
    MAX_EPOCH,
    MAX_ID_CHARS,
    MIN_BOX_BYTES,
    RelayConfig,
    epoch_end,
)
from muretai_cli.relay.notify import LocalNotifier, Notifier
from muretai_cli.relay.store import MAX_MAILBOX_BYTES, Deposit, DepositOutcome
from muretai_cli.seam import (
    ENVELOPE_MAX_AHEAD,
    b64decode_strict,
    envelope_freshness,
    is_enc_pub,
    verify_card_envelope,
    verify_listen_token,
    verify_relay_send,
)
from muretai_cli.transport.rate import KeyedBuckets, admit

if TYPE_CHECKING:
    from muretai_cli.relay.store import RelayStore, Waiting

log = logging.getLogger("uvicorn.error")
T = TypeVar("T")


class StoreCalls:
    """Where the relay's store calls run. On SQLite (one connection, one writer) on the
    event loop itself, as they always did: nothing here waits. On a store with several
    connections (PostgreSQL) never on the loop: deposits join a group commit (one worker
    thread runs every deposit waiting in one transaction with one commit: ``db.Batcher``,
    ``RelayStore.deposit_many``) and every other call runs on a small pool of threads, so
    the loop serves other requests while the database answers."""

    def __init__(self, store: RelayStore, *, max_waiting: int, channel: str | None,
                 max_bytes: int = MAX_MAILBOX_BYTES) -> None:
        self.store = store
        self.max_waiting = max_waiting
        self.max_bytes = max_bytes
        self.channel = channel
        self.threads: ThreadPoolExecutor | None = None
        self.deposits: Batcher[Deposit, DepositOutcome] | None = None
        if store.db.connections > 1:
            self.threads = ThreadPoolExecutor(store.db.connections, thread_name_prefix="relay")
            self.deposits = Batcher(self._deposit_many, name="relay-deposits")

    def _deposit_many(self, items: list[Deposit]) -> list[DepositOutcome]:
        return self.store.deposit_many(items, max_waiting=self.max_waiting,
                                       max_bytes=self.max_bytes, channel=self.channel)

    async def deposit(self, item: Deposit) -> DepositOutcome:
        if self.deposits is None:
            return self._deposit_many([item])[0]
        return await self.deposits.submit(item)

    async def call(self, work: Callable[[], T]) -> T:
        if self.threads is None:
            return work()
        return await asyncio.get_running_loop().run_in_executor(self.threads, work)

    def close(self) -> None:
        """Run what is queued, then stop the worker and the threads."""
        if self.deposits is not None:
            self.deposits.close()
        if self.threads is not None:
            self.threads.shutdown(wait=True)


class Relay:
    """One relay for many DIDs: a store, rate limits and the long-poll wake-ups.

    Every route is a coroutine; its store calls go through ``StoreCalls`` (in place on
    SQLite, off the event loop on PostgreSQL)."""

    def __init__(self, config: RelayConfig, store: RelayStore, *,
                 clock: Callable[[], float] = time.time,
                 notifier: Notifier | None = None) -> None:
        self.config = config
        self.limits = config.limits
        self.store = store
        self.clock = clock
        self.notifier = notifier or LocalNotifier()
        self.calls = StoreCalls(store, max_waiting=self.limits.max_waiting,
                                channel=self.notifier.channel,
                                max_bytes=self.limits.max_mailbox_bytes)
        self.origin = config.url.origin
        self._by_sender = KeyedBuckets(self.limits.per_sender)
        self._by_mailbox = KeyedBuckets(self.limits.per_mailbox)
        # a mailbox's owner's correspondents (those it deposited for) have a lane of their
        # own into it, beside the one all other senders share: fresh keys flooding the
        # shared lane cannot starve a friend (see ``_rate``)
        self._by_pair = KeyedBuckets(self.limits.per_mailbox)
        self._wrote: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._last_expire = 0.0
        # blob characters waiting (all, for never-listened DIDs) as the store last said,
        # and what this process queued since: an over-estimate that only says when to ask
        self._held: tuple[int, int] = (0, 0)
        self._held_at = -HELD_REFRESH
        self._queued_since = 0
        self._held_by_did: dict[str, list[asyncio.Event]] = {}  # oldest first
        self._cards_by_did = KeyedBuckets(self.limits.card_per_did)
        self._new_cards = KeyedBuckets(self.limits.new_cards, max_keys=1)

    # -- deposits ------------------------------------------------------------------------
    async def send(self, raw: bytes) -> Answer:
        """``POST <path>/send`` ``{to, from, from_enc, id, blob, sig}``."""
        return await self._guard(self._send, raw)

    async def _send(self, raw: bytes) -> Answer:
        item = self._deposit(raw)
        await self._maybe_expire(item.received)
        await self._room(item)
        outcome = await self.calls.deposit(item)
        if outcome == "queued":
            self._queued_since += len(item.blob)
            self.notifier.notify(item.to)  # other processes: signalled by its commit
            return ok({"queued": True, "id": item.id})
        if outcome == "duplicate":
            return ok({"queued": True, "duplicate": True, "id": item.id})
        if outcome == "id-reused":
            raise Refusal(409, "id-reused", "that id already names another deposit for this "
                                            "recipient; use a new id for new content")
        raise Refusal(507, "mailbox-full", f"{self.limits.max_waiting} messages or "
                                           f"{self.limits.max_mailbox_bytes} bytes already "
                                           "wait for this recipient")

    async def _room(self, item: Deposit) -> None:
        """The relay-wide bounds (else 507 ``relay-full``): what waits in all, and for DIDs
        that never listened. Counted by the store at most every ``HELD_REFRESH`` s, and only
        once this process's over-estimate (the last count + all it queued since) nears one
        of them: the common path asks nothing."""
        size = len(item.blob)
        total, strangers = self._held
        guess = self._queued_since + size
        if total + guess <= self.limits.max_relay_bytes and \
                strangers + guess <= self.limits.max_stranger_bytes:
            return
        now = self.clock()
        if now - self._held_at >= HELD_REFRESH:
            self._held = total, strangers = await self.calls.call(self.store.held_bytes)
            self._held_at, self._queued_since = now, 0
            guess = size
        if total + guess > self.limits.max_relay_bytes:
            raise Refusal(507, "relay-full", "the relay holds as much as it keeps "
                                             f"({self.limits.max_relay_bytes} bytes waiting); "
                                             "retry later")
        if strangers + guess > self.limits.max_stranger_bytes and \
                await self.calls.call(lambda: self.store.epoch(item.to)) is None:
            raise Refusal(507, "relay-full", "the relay holds as much as it keeps for DIDs "
                                             "that never listened "
                                             f"({self.limits.max_stranger_bytes} bytes); "
                                             "retry later")

    def _deposit(self, raw: bytes) -> Deposit:
        """A deposit's body checked, its signature verified and its rates taken (else a
        refusal): what to store."""
        doc = json_object(raw)
        to, sender = did_field(doc, "to"), did_field(doc, "from")
        sender_enc = str_field(doc, "from_enc")
        if not is_enc_pub(sender_enc):
            malformed("from_enc must be 64 lowercase hex characters")
        deposit_id = str_field(doc, "id")
        if not 1 <= len(deposit_id) <= MAX_ID_CHARS or ID_FORBIDDEN.search(deposit_id):
            malformed(f"id must be 1-{MAX_ID_CHARS} characters, without control "
                       "characters or '|'")
        blob = str_field(doc, "blob")
        if len(blob) > self.limits.max_blob:
            raise Refusal(413, "too-large", f"the blob is {len(blob)} characters; at most "
                                            f"{self.limits.max_blob}")
        try:
            box = b64decode_strict(blob, code="bad-blob", max_len=self.limits.max_blob)
        except MuretaiError:
            malformed("blob must be standard padded base64")
        if len(box) < MIN_BOX_BYTES:
            malformed(f"blob holds {len(box)} bytes; a sealed box has at least "
                       f"{MIN_BOX_BYTES}")
        try:
            verify_relay_send(to=to, sender=sender, deposit_id=deposit_id, blob=blob,
                              sig=doc.get("sig"))
        except MuretaiError as exc:
            raise Refusal(401, "bad-signature", f"sig does not verify under from "
                                                f"({exc.code})") from None
        now = self.clock()
        self._rate(to, sender, now)
        return Deposit(to, sender, sender_enc, deposit_id, blob, int(now))

    def _rate(self, to: str, sender: str, now: float) -> None:
        """Take a deposit's tokens (else 429): the sender's bucket, and the mailbox's lane
        for it. A sender the mailbox's owner deposited for within ``--expire`` (remembered
        in this process, the most recent ``CORRESPONDENTS`` pairs) has a lane of its own,
        at the mailbox's rate; every other sender shares the mailbox's bucket."""
        wrote = self._wrote.get((to, sender))
        friend = wrote is not None and now - wrote < self.limits.expire_seconds
        lane = self._by_pair.get(f"{to} {sender}", now) if friend \
            else self._by_mailbox.get(to, now)
        wait = admit((self._by_sender.get(sender, now), lane), now)
        if wait:
            raise Refusal(429, "rate-limited", f"too many deposits; retry in {wait} s",
                          ((b"retry-after", str(wait).encode()),))
        self._wrote[(sender, to)] = now  # the recipient is now the sender's correspondent
        self._wrote.move_to_end((sender, to))
        if len(self._wrote) > CORRESPONDENTS:
            self._wrote.popitem(last=False)

    async def _maybe_expire(self, now: int) -> None:
        if now - self._last_expire >= 60:
            self._last_expire = now
            before = now - self.limits.expire_seconds
            await self.calls.call(lambda: self.store.expire(before))
            await self.calls.call(lambda: self.store.expire_cards(before))

    # -- listeners -----------------------------------------------------------------------
    async def _listener(self, doc: dict[str, Any]) -> tuple[str, int]:
        """The DID a listen/ack body proves it holds, and its epoch (else 400/401/409)."""
        did = did_field(doc, "did")
        minute = int_field(doc, "minute", low=0, high=MAX_EPOCH)
        token = str_field(doc, "token")
        epoch = int_field(doc, "epoch", low=0, high=MAX_EPOCH)
        now_minute = int(self.clock() // 60)
        try:
            if abs(minute - now_minute) > self.limits.minute_skew:
                raise MuretaiError("stale", "minute out of range")
            verify_listen_token(did=did, minute=minute, token=token, origin=self.origin)
        except MuretaiError:
            raise Refusal(401, "bad-token", "the listen token is not valid here and now; sign "
                                            "a fresh one for this relay") from None
        if epoch >= epoch_end(minute):
            raise Refusal(400, "epoch-ahead", f"epoch {epoch} is later than the token's minute "
                                              f"{minute} (an epoch counts microseconds since "
                                              "1970 at the listener's start; at most "
                                              f"{epoch_end(minute) - 1})")
        void = epoch_end(now_minute + self.limits.minute_skew)  # no valid token allows it
        claimed = await self.calls.call(
            lambda: self.store.claim_epoch(did, epoch, void_from=void,
                                           channel=self.notifier.channel))
        if claimed == "superseded":
            raise _superseded()
        if claimed == "newer":
            self.notifier.notify(did)  # held polls of an older epoch answer 409 now (other
            # processes': signalled by the claim's commit)
        return did, epoch

    def _look(self, did: str, epoch: int | None, since: int
              ) -> tuple[bool, list[Waiting], bool]:
        """Whether a newer listener holds ``did`` now (asked only with an ``epoch``), and
        else its waiting messages as ``store.waiting`` gives them."""
        if epoch is not None and self.store.epoch(did) != epoch:
            return True, [], False
        found, more = self.store.waiting(did, limit=self.limits.batch, since=since)
        return False, found, more

    def _since(self) -> int:
        return int(self.clock()) - self.limits.expire_seconds

    async def listen(self, raw: bytes, gone: asyncio.Event | None = None,
                     cut: asyncio.Event | None = None) -> Answer | None:
        """``POST <path>/listen`` ``{did, minute, token, epoch, wait}``: waiting messages,
        at once or when one arrives within ``wait`` seconds. None if the client left.
        ``cut`` set: answer now with what waits (the transport makes room for a newcomer,
        or the DID holds more than ``HELD_PER_DID`` listens and this is the oldest)."""
        try:
            doc = json_object(raw)
            wait = doc.get("wait", self.limits.default_wait)
            if not isinstance(wait, int | float) or isinstance(wait, bool) \
                    or not 0 <= wait <= self.limits.max_wait:
                malformed(f"wait must be a number of seconds from 0 to {self.limits.max_wait:g}")
            did, epoch = await self._listener(doc)
            return await self._hold(did, epoch, float(wait), gone, cut or asyncio.Event())
        except Refusal as refusal:
            return refusal.answer()
        except Unstorable as exc:
            return refusal_answer(400, "malformed", exc.detail)
        except DatabaseUnavailable:
            return _unavailable()

    async def _hold(self, did: str, epoch: int, wait: float, gone: asyncio.Event | None,
                    cut: asyncio.Event) -> Answer | None:
        held = self._held_by_did.setdefault(did, [])
        held.append(cut)
        if len(held) > HELD_PER_DID:
            held[0].set()  # the oldest of this DID's held listens answers now
        try:
            return await self._holding(did, epoch, wait, gone, cut)
        finally:
            held.remove(cut)
            if not held:
                del self._held_by_did[did]

    async def _holding(self, did: str, epoch: int, wait: float, gone: asyncio.Event | None,
                       cut: asyncio.Event) -> Answer | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        first = True
        while True:
            with self.notifier.subscribe(did) as sub:
                # after the first look, the epoch may have been taken over meanwhile
                superseded, found, more = await self.calls.call(
                    partial(self._look, did, None if first else epoch, self._since()))
                first = False
                if superseded:
                    raise _superseded()
                left = deadline - loop.time()
                if found or left <= 0 or cut.is_set():
                    return ok({"messages": [m.to_json() for m in found], "more": more})
                waits = [asyncio.ensure_future(sub.wait(left)), asyncio.ensure_future(cut.wait())]
                if gone is not None:
                    waits.append(asyncio.ensure_future(gone.wait()))
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for waiting in waits:
                        waiting.cancel()
                if gone is not None and gone.is_set():
                    return None

    async def ack(self, raw: bytes) -> Answer:
        """``POST <path>/ack`` ``{did, minute, token, epoch, ids}``: delete those messages."""
        return await self._guard(self._ack, raw)

    async def _ack(self, raw: bytes) -> Answer:
        doc = json_object(raw)
        ids = doc.get("ids")
        if not isinstance(ids, list) or len(ids) > MAX_ACK_IDS \
                or not all(isinstance(i, str) and len(i) <= MAX_ID_CHARS for i in ids):
            malformed(f"ids must be a list of at most {MAX_ACK_IDS} deposit ids")
        did, _ = await self._listener(doc)
        unique = list(dict.fromkeys(ids))
        return ok({"acked": await self.calls.call(lambda: self.store.ack(did, unique))})

    # -- cards ---------------------------------------------------------------------------
    async def put_card(self, raw: bytes) -> Answer:
        """``POST <path>/card``: a signed card envelope, stored if newer than the last."""
        return await self._guard(self._put_card, raw)

    async def _put_card(self, raw: bytes) -> Answer:
        doc = json_object(raw)
        card = doc.get("card")
        did = card.get("did") if isinstance(card, dict) else None
        if not isinstance(did, str):
            malformed("a card envelope is {v, typ, card: {did, ...}, ts, sig}")
        did_field(card, "did")  # type: ignore[arg-type]
        try:
            verify_card_envelope(doc, expected_did=did)
        except MuretaiError as exc:
            raise Refusal(400, "bad-card", f"the envelope does not verify under card.did "
                                           f"({exc.code}: {exc.detail})") from None
        ts = doc["ts"]
        if envelope_freshness(ts, int(self.clock())) == "from-the-future":
            raise Refusal(400, "bad-card", "ts is in the future by more than "
                                           f"{ENVELOPE_MAX_AHEAD} s")
        held, listened = await self.calls.call(lambda: self.store.card_standing(did))
        now = self.clock()
        wait = admit((self._cards_by_did.get(did, now),
                      None if held else self._new_cards.get("", now)), now)
        if wait:
            raise Refusal(429, "rate-limited", f"too many card posts; retry in {wait} s",
                          ((b"retry-after", str(wait).encode()),))
        await self._maybe_expire(int(now))  # prunes old cards of strangers, before counting
        if not held and not listened and await self.calls.call(
                self.store.stranger_cards) >= self.limits.stranger_cards:
            raise Refusal(507, "relay-full", f"the relay holds {self.limits.stranger_cards} "
                                             "cards of DIDs that never listened; listen "
                                             "first, or retry later")
        envelope = encode_json({"v": 1, "typ": doc["typ"], "card": card, "ts": ts,
                                "sig": doc["sig"]})
        if not await self.calls.call(lambda: self.store.put_card(did, ts, envelope)):
            raise Refusal(409, "stale-card", "the relay holds an envelope for this DID that is "
                                             "as new or newer (ts)")
        return ok({"stored": True, "did": did, "ts": ts})

    async def get_card(self, did: str) -> Answer:
        """``GET <path>/card/<did>``: the stored envelope, unverified by the reader's lights."""
        if did_problem(did) is not None:
            return refusal_answer(404, "not-found", "no card for that DID")
        try:
            stored = await self.calls.call(lambda: self.store.card(did))
        except DatabaseUnavailable:
            return _unavailable()
        if stored is None:
            return refusal_answer(404, "not-found", "no card for that DID")
        return 200, stored.encode(), JSON_HEADERS

    # -- shared ----------------------------------------------------------------------------
    def close(self) -> None:
        """Run the deposits queued, stop the store's threads, close the store."""
        self.calls.close()
        self.store.close()

    @staticmethod
    async def _guard(route: Callable[[bytes], Awaitable[Answer]], raw: bytes) -> Answer:
        try:
            return await route(raw)
        except Refusal as refusal:
            return refusal.answer()
        except Unstorable as exc:  # the request's value, not the relay: a NUL, say
            return refusal_answer(400, "malformed", exc.detail)
        except DatabaseUnavailable:
            return _unavailable()


def _superseded() -> Refusal:
    return Refusal(409, "superseded", "a newer listener (a higher epoch) holds this DID")


def _unavailable() -> Answer:
    log.warning("relay: the database is unavailable")
    return Refusal(503, "unavailable", "the relay's store is unavailable; retry later",
                   ((b"retry-after", b"1"),)).answer()
