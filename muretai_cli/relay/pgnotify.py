"""Waking long-polls across processes: PostgreSQL ``LISTEN``/``NOTIFY`` behind ``Notifier``.

Every relay process on one database LISTENs on one channel (per relay schema) from a
connection of its own, in its event loop. A change (a deposit queued, a newer listener)
is signalled by the store in the transaction that makes it (``NOTIFY channel, did``:
``RelayStore.deposit_many``, ``claim_epoch``), so the signal leaves with the commit, and
only if it commits; ``notify(did)`` then wakes this process's own polls at once, and each
other process receives the signal and wakes its polls for that DID. A poll woken for
nothing looks at the store and waits again, so a stray or doubled signal costs one read.
When the LISTEN connection is lost, every held poll is woken on reconnection (a signal may
have been missed meanwhile), and until then polls still end at their ``wait``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg
from psycopg import sql as pgsql

from muretai_cli.relay.notify import LocalNotifier, Notifier, Subscription

log = logging.getLogger("uvicorn.error")
RECONNECT_DELAY = 1.0


CHANNEL = "muretai_relay"


class PgNotifier(Notifier):
    def __init__(self, url: str, *, channel: str = CHANNEL) -> None:
        self._url = url
        self._channel = channel
        self.channel = channel
        self._local = LocalNotifier()
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()  # set while LISTEN is in place (for tests and health)

    def subscribe(self, did: str) -> Subscription:
        return self._local.subscribe(did)

    def notify(self, did: str) -> None:
        self._local.notify(did)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._listen())

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _wake_all(self) -> None:
        for did in list(self._local._subs):
            self._local.notify(did)

    async def _listen(self) -> None:
        listen = pgsql.SQL("LISTEN {}").format(pgsql.Identifier(self._channel))
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                        self._url, autocommit=True, connect_timeout=3) as conn:
                    await conn.execute(listen)
                    self.ready.set()
                    self._wake_all()
                    async for note in conn.notifies():
                        self._local.notify(note.payload)
            except (psycopg.Error, OSError) as exc:
                log.warning("relay: LISTEN connection lost (%s); reconnecting",
                            str(exc).strip().splitlines()[0] if str(exc).strip() else exc)
            finally:
                self.ready.clear()
            await asyncio.sleep(RECONNECT_DELAY)
