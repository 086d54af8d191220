"""Waking held long-polls: "something changed for this DID" (a deposit, a newer listener).

A listener subscribes BEFORE it looks at the store and waits only after finding nothing,
so a change between the look and the wait is never missed. ``LocalNotifier`` serves one
process (one event loop); ``pgnotify.PgNotifier`` serves several processes on one
PostgreSQL database: the store's transaction that makes a change signals it on the
notifier's ``channel`` (``NOTIFY``), and each process's ``LISTEN`` wakes its own polls.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from types import TracebackType


class Subscription(ABC):
    """One listener's interest in one DID; a context manager."""

    @abstractmethod
    async def wait(self, timeout: float) -> bool:
        """Until a change is signalled (True) or ``timeout`` seconds pass (False)."""

    def close(self) -> None:
        return None

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class Notifier(ABC):
    # The PostgreSQL channel other processes LISTEN on; None: this process alone. A store
    # on PostgreSQL signals a change there (``NOTIFY``) in the transaction that makes it,
    # so other processes hear of it when, and only if, it commits.
    channel: str | None = None

    @abstractmethod
    def subscribe(self, did: str) -> Subscription: ...

    async def start(self) -> None:
        """Begin receiving other processes' signals (in the server's event loop)."""
        return None

    async def aclose(self) -> None:
        return None

    @abstractmethod
    def notify(self, did: str) -> None:
        """Wake this process's subscriptions to ``did`` (cheap when nobody listens)."""


class _LocalSubscription(Subscription):
    __slots__ = ("_did", "_event", "_owner")

    def __init__(self, owner: LocalNotifier, did: str) -> None:
        self._owner = owner
        self._did = did
        self._event = asyncio.Event()

    def fire(self) -> None:
        self._event.set()

    async def wait(self, timeout: float) -> bool:
        try:
            async with asyncio.timeout(max(timeout, 0.0)):
                await self._event.wait()
        except TimeoutError:
            return False
        self._event.clear()
        return True

    def close(self) -> None:
        self._owner._drop(self._did, self)


class LocalNotifier(Notifier):
    """In-process: a set of subscriptions per DID, fired from the same event loop."""

    def __init__(self) -> None:
        self._subs: dict[str, set[_LocalSubscription]] = {}

    def subscribe(self, did: str) -> Subscription:
        sub = _LocalSubscription(self, did)
        self._subs.setdefault(did, set()).add(sub)
        return sub

    def notify(self, did: str) -> None:
        for sub in self._subs.get(did, ()):
            sub.fire()

    def _drop(self, did: str, sub: _LocalSubscription) -> None:
        subs = self._subs.get(did)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[did]

    def listeners(self) -> int:
        """How many subscriptions are open (for tests and figures)."""
        return sum(len(s) for s in self._subs.values())
