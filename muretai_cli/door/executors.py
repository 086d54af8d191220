"""Where the door's store calls run: in place (SQLite's one connection, a command, a test)
or grouped (a shared PostgreSQL store: the hot path's lookups and commits in group commits,
the rest on threads); and the door's rate ceilings counted in the store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from muretai_cli.db import Batcher

if TYPE_CHECKING:
    from muretai_cli.inbox.arrival import Arrival
    from muretai_cli.inbox.store import IdentityStore, Limits

__all__ = ["IN_PLACE", "Grouped", "InPlace", "SharedRateLimits", "at_once"]


class SharedRateLimits:
    """The door's two ceilings counted in its store, so every process serving the identity
    shares them (a fixed one-minute window; see ``IdentityStore.take_rate``)."""

    TOTAL = "*"  # the whole door's bucket (no DID is a bare asterisk)

    def __init__(self, store: IdentityStore, per_sender: int, total: int) -> None:
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

    async def lookup(self, store: IdentityStore, message_id: str, sender: str, now: int
                     ) -> tuple[bool, str | None]:
        return store.lookup(message_id, sender, now)

    async def accept(self, store: IdentityStore, arrival: Arrival, now: int, limits: Limits
                     ) -> tuple[bool, int]:
        """Count the request against its shared rate ``limits`` (none: not counted here)
        and, if they admit it, commit the message: ``(accepted, wait)``, as
        ``IdentityStore.lookup_and_accept`` gives each accept."""
        return store.lookup_and_accept((), [(arrival, now, limits)])[1][0]

    async def take_rate(self, store: IdentityStore, limits: Limits, now: int) -> int:
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
    arrival: Arrival
    now: int
    limits: Limits


class Grouped(InPlace):
    """A shared store's calls (PostgreSQL) from the event loop. The hot path's two (the
    replay and sender lookup before the signature; the rate count and commit after it)
    join one group commit: every lookup, count and commit waiting go to the database
    together, a statement each, the commits in one transaction with one disk flush
    (``db.Batcher``, ``IdentityStore.lookup_and_accept``). Anything else runs on the door's
    threads."""

    def __init__(self, store: IdentityStore, threads: ThreadPoolExecutor) -> None:
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
        accepts = [(i.arrival, i.now, i.limits) for i in items if isinstance(i, _Accept)]
        looked, accepted = self.store.lookup_and_accept(lookups, accepts)
        done_l, done_a = iter(looked), iter(accepted)
        return [next(done_l) if isinstance(item, _Lookup) else next(done_a) for item in items]

    async def lookup(self, store: IdentityStore, message_id: str, sender: str, now: int
                     ) -> tuple[bool, str | None]:
        seen, status = await self.batches.submit(_Lookup(message_id, sender, now))
        return bool(seen), None if status is None else str(status)

    async def accept(self, store: IdentityStore, arrival: Arrival, now: int, limits: Limits
                     ) -> tuple[bool, int]:
        accepted, wait = await self.batches.submit(_Accept(arrival, now, limits))
        return bool(accepted), int(wait or 0)

    async def take_rate(self, store: IdentityStore, limits: Limits, now: int) -> int:
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

