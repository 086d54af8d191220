"""``turn-check --follow --exec CMD``: wake a program for each message the follower stored.

CMD is run by the door's own ``--on-message`` executor (``door.respond.OnMessage``): split
like a shell line but never through a shell, in its own process group, the message as one
JSON object on stdin (never on its command line: ``ps`` shows every argument), under one
deadline after which its whole group is killed, its output capped. Here it runs on a loop
of its own in one thread, off the follower's listening, one CMD at a time and in order (the
follower holds the identity's listener lease, so that is one at a time per identity). Each
message has its own deadline, counted from its own start: a slow or failing CMD is reported
(stderr; an ``exec`` line with ``--json``) and the next message runs after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from muretai_cli.door.respond import OnMessage, Outcome

Report = Callable[[dict[str, Any], "Outcome"], None]


class Wake:
    """One follower's CMD runner: ``give`` a message event; ``close`` when the follow ends."""

    def __init__(self, runner: OnMessage, report: Report) -> None:
        self.runner = runner
        self.report = report
        self.left = 0  # given, not finished (for the last word when the follow ends)
        self._count = threading.Lock()  # ``left`` moves on both threads
        self._loop = asyncio.new_event_loop()
        self._queue: asyncio.Queue[dict[str, Any]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="turn-check-exec",
                                        daemon=True)
        self._thread.start()
        self._ready.wait()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._queue = asyncio.Queue()
        self._task = self._loop.create_task(self._consume())
        self._ready.set()
        with contextlib.suppress(asyncio.CancelledError):
            self._loop.run_until_complete(self._task)
        self._loop.close()

    async def _consume(self) -> None:
        queue = self._queue
        if queue is None:  # pragma: no cover - made before the task starts
            return
        while True:
            event = await queue.get()
            outcome = await self.runner.answer(event)  # never raises; kills its group late
            with self._count:
                self.left -= 1
            self.report(event, outcome)

    def give(self, event: dict[str, Any]) -> None:
        """Queue CMD for ``event`` (a message as ``--json`` shows it); returns at once."""
        queue = self._queue
        if queue is None or self._loop.is_closed():
            return
        with self._count:
            self.left += 1
        self._loop.call_soon_threadsafe(queue.put_nowait, event)

    def close(self) -> int:
        """Stop: a running CMD's group is killed (cancelled, as at its deadline), queued
        ones never start. Returns how many given messages did not finish."""
        task = self._task
        if task is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(task.cancel)
        self._thread.join()
        return max(0, self.left)
