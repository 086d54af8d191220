"""Waiting for the reply to a message I sent (``op dm --wait-reply``, the MCP
``wait_for_message {reply_to}``).

A reply is the first verified message in my store, after the cursor taken before the send,
from the peer the message went to, whose ``replyTo`` is the sent ``messageId`` (the store
keeps a ``replyTo`` only when the reply's signed fields prove it: ``inbox.relayed.
proved_reply_to``), or, in conversation mode, any message from that peer in that
conversation. It reaches the store by a door POST to my own door, or by a drain of my relay
mailbox: while waiting, ``await_reply`` runs ``drain`` (one relay drain of up to N seconds,
as a one-shot ``turn-check``) on a thread of its own, and is woken by the store's commits
(``Database.changes``) whichever way the reply came.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import MuretaiError

if TYPE_CHECKING:
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.net import ClientFor
    from muretai_cli.seam import SigningKey

__all__ = ["Awaited", "Drain", "ReplyScope", "await_reply", "relay_drain", "scope_of"]

# One drain of the relay mailbox, listening up to N seconds, committing what it takes;
# False: it did not drain (another process holds the listener) and is not to be called again.
Drain = Callable[[int], bool]
DRAIN_SLICE = 25  # seconds one listen of the waiting drain holds (the relay caps it too)


@dataclass(frozen=True, slots=True)
class ReplyScope:
    """What counts as the reply: from ``peer``, and answering ``reply_to`` (its proved
    ``replyTo``) or, when ``context`` is given, any message of that conversation."""

    peer: str
    reply_to: str | None = None
    context: str | None = None

    def __post_init__(self) -> None:
        if self.reply_to is None and self.context is None:
            raise ValueError("a reply scope names the message answered or its conversation")

    @property
    def filters(self) -> dict[str, str | None]:
        """The store's filters (``read_after``'s, each an index): the peer, and the
        conversation or the message answered."""
        return {"peer": self.peer, "context": self.context,
                "reply_to": None if self.context is not None else self.reply_to}


def scope_of(store: IdentityStore, reply_to: str, *, peer: str | None = None,
             context: str | None = None) -> ReplyScope | None:
    """The scope of a reply to my message ``reply_to``: from the peer it was sent to (a
    message from anyone else is no reply to it). None when this identity sent no such
    message, or ``peer`` is not the one it went to: nothing can answer it."""
    sent = store.sent_message(reply_to)
    if sent is None or (peer is not None and peer != sent["to"]):
        return None
    return ReplyScope(str(sent["to"]), reply_to, context)


@dataclass(frozen=True, slots=True)
class Awaited:
    """What a wait found: the reply (an inbox entry, with its ``seq``), or none when the
    time was up; ``latest``, the store's highest seq then; ``problem``, why the relay drain
    stopped early (the wait went on over the store)."""

    entry: dict[str, Any] | None
    latest: int
    problem: MuretaiError | None = None

    @property
    def timed_out(self) -> bool:
        return self.entry is None


def await_reply(store: IdentityStore, scope: ReplyScope, *, after: int, timeout: float,
                drain: Drain | None = None,
                clock: Callable[[], float] = time.monotonic) -> Awaited:
    """The first entry after ``after`` that ``scope`` matches, at once when one is there,
    else the first committed within ``timeout`` seconds (by any process, or by ``drain``
    running on a thread beside the wait), else ``Awaited(None, latest)``.

    Raises ``InputError`` for a bad cursor or wait, ``DatabaseUnavailable`` when the store
    cannot be read or watched."""
    from muretai_cli.inbox.reader import READ_LIMIT_MAX, checked_wait, read_after

    deadline = clock() + checked_wait(timeout)
    stop = threading.Event()
    problems: list[MuretaiError] = []
    with store.db.changes() as changes:  # opened before the first read: nothing slips by
        if drain is not None:
            threading.Thread(target=_drain_until, args=(drain, stop, deadline, clock, problems),
                             name="reply-drain", daemon=True).start()
        try:
            while True:
                page = read_after(store, after, limit=READ_LIMIT_MAX, **scope.filters)
                hit = next((e for e in page.entries if e.get("verified") is True), None)
                if hit is not None:
                    return Awaited(hit, page.latest, _first(problems))
                after = page.cursor  # nothing up to it matches: read on from there
                if page.more:
                    continue
                left = deadline - clock()
                if left <= 0:
                    return Awaited(None, page.latest, _first(problems))
                changes.wait(left)
        finally:
            stop.set()  # the drain ends after its current listen (a daemon: never waited on)


def _first(problems: list[MuretaiError]) -> MuretaiError | None:
    return problems[0] if problems else None


def _drain_until(drain: Drain, stop: threading.Event, deadline: float,
                 clock: Callable[[], float], problems: list[MuretaiError]) -> None:
    """Drain the relay until the wait ends; a relay failure ends the draining (the wait
    goes on: a reply may still come by my door, or by another process's drain)."""
    while not stop.is_set():
        left = int(deadline - clock())
        if left < 1:
            return
        try:
            if not drain(min(left, DRAIN_SLICE)):
                return
        except MuretaiError as exc:
            problems.append(exc)
            return
        except Exception as exc:  # a thread's failure is told, never a traceback
            problems.append(MuretaiError("drain-failed", f"the relay drain failed: "
                                                         f"{type(exc).__name__}"))
            return


def relay_drain(key: SigningKey, relay_url: str, open_store: Callable[[], IdentityStore],
                client_for: ClientFor) -> Drain:
    """One drain of ``key``'s relay mailbox as a one-shot ``turn-check`` drains it
    (``visit.turn.drain_unless_held``: committed, then acknowledged; shown by the next
    turn-check), on a store of its own (it runs on the wait's thread), holding the
    identity's listener lease meanwhile. When another process (a ``turn-check --follow``,
    the MCP server) holds the listener, nothing is asked of the relay and the drain says so
    (False): that holder commits the reply, and the wait reads it from the store."""
    from muretai_cli.inbox.consent import policy_of
    from muretai_cli.visit.relay import RelayClient
    from muretai_cli.visit.turn import drain_unless_held

    def drain(seconds: int) -> bool:
        store = open_store()
        try:
            return drain_unless_held(key, store, RelayClient(relay_url, client_for),
                                     policy_of(store), wait=seconds) is not None
        finally:
            store.close()

    return drain
