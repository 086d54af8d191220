"""Group commit: requests from an event loop, run together on one worker thread.

A server on a shared database (PostgreSQL) has many requests in flight in one process; each
waiting for its own round trip and its own commit costs client CPU, server CPU and a disk
flush apiece. ``Batcher.submit(item)`` queues the item and awaits its result; one worker
thread takes every item waiting, hands them to ``run`` at once (one statement, one
transaction, one commit) and settles every request's future with its own result. A batch
gathers for a couple of turns of the event loop, and while one is at the database the next
one gathers, so the batch size follows the load; one request alone is not held back.

``run(items)`` returns one result per item, in order; a result that is an exception is
raised to that request alone. ``run`` commits a whole batch or nothing of it. If it raises
``DatabaseUnavailable``, every request of the batch gets that exception (nothing committed:
each request answers 503); if it raises anything else, each item is run again alone, so one
item the database refuses fails only its own request.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from muretai_cli.db._core import DatabaseUnavailable

T = TypeVar("T")
R = TypeVar("R")

MAX_BATCH = 256  # items handed to one ``run`` at most (a bound on one statement's size)
# Turns of the event loop a batch keeps gathering before it goes to the worker: requests whose
# bytes arrived meanwhile reach their store call and join it (fewer, larger batches: in A/B
# runs of two door processes on this shared machine, some 10 % less CPU per message than
# handing over at once, and 6 turns no better than 2; noisy). An idle loop's turns take
# microseconds, so a lone request is not held back.
GATHER_TURNS = 2


class Batcher(Generic[T, R]):
    """One worker thread that runs queued items in batches (see the module's text)."""

    def __init__(self, run: Callable[[list[T]], Sequence[R | BaseException]], *,
                 name: str, max_batch: int = MAX_BATCH) -> None:
        self._run = run
        self._name = name
        self._max = max_batch
        self._cond = threading.Condition()
        self._gathering: list[tuple[T, asyncio.Future[R]]] = []  # this loop turn's (loop only)
        self._pending: list[tuple[T, asyncio.Future[R]]] = []  # the worker's (under _cond)
        self._waiting = False  # the worker sleeps on the condition
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    async def submit(self, item: T) -> R:
        """``item``'s result, once the batch it joined has run (its exception, if any)."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        if self._closed:
            raise RuntimeError(f"{self._name}: closed")
        future: asyncio.Future[R] = self._loop.create_future()
        self._gathering.append((item, future))
        if len(self._gathering) == 1:  # the first one gathered: hand over a few turns on
            self._loop.call_soon(self._hand_over, self._loop, GATHER_TURNS)
        return await future

    def _hand_over(self, loop: asyncio.AbstractEventLoop, turns: int) -> None:
        """On the loop: what was gathered goes to the worker at once, ``turns`` turns of the
        loop after the first item came (a batch is at least everything that arrived
        together, and what reached its store call in those turns)."""
        if turns > 0:
            loop.call_soon(self._hand_over, loop, turns - 1)
            return
        with self._cond:
            self._pending.extend(self._gathering)
            self._gathering = []
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, args=(loop,),
                                                name=self._name, daemon=True)
                self._thread.start()
            elif self._waiting:
                self._cond.notify()

    def _work(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._waiting = True
                    self._cond.wait()
                    self._waiting = False
                if not self._pending:
                    return
                batch = self._pending[:self._max]
                del self._pending[:self._max]
            results = self._results([item for item, _ in batch])
            try:
                loop.call_soon_threadsafe(_settle, batch, results)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                return

    def _results(self, items: list[T]) -> Sequence[R | BaseException]:
        """One result (or exception) per item. The database away fails the whole batch (it
        committed nothing). Any other failure is taken for one item's doing (a value the
        database refuses): each item is then run alone, so one hostile request never fails
        the others. ``run`` must commit all of a batch or none of it."""
        try:
            results = self._run(items)
            if len(results) != len(items):
                raise RuntimeError(f"{self._name}: {len(results)} results for "
                                   f"{len(items)} items")
            return results
        except DatabaseUnavailable as exc:
            return [exc] * len(items)
        except Exception as exc:
            if len(items) == 1:
                return [exc]
        return [self._results([item])[0] for item in items]

    def close(self) -> None:
        """Run what is queued, then stop the worker."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)


def _settle(batch: list[tuple[T, asyncio.Future[R]]],
            results: Sequence[R | BaseException]) -> None:
    for (_, future), result in zip(batch, results, strict=True):
        if future.done():  # its request was cancelled (the client went away)
            continue
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)
