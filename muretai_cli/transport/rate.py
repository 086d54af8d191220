"""Rate limits: token buckets per key (a sender, a mailbox) and for a whole server (0 disables).

The door limits signed requests per sender and in total; the relay limits deposits per
sender and per mailbox. A request takes a token from each of its buckets only when all of
them have one, so a refused request costs nobody anything.
"""

from __future__ import annotations

import math
from collections import OrderedDict


class Bucket:
    """A token bucket holding ``per_minute`` tokens, refilled continuously."""

    __slots__ = ("at", "rate", "size", "tokens")

    def __init__(self, per_minute: int, now: float) -> None:
        self.size = float(per_minute)
        self.rate = per_minute / 60.0
        self.tokens = self.size
        self.at = now

    def wait(self, now: float) -> float:
        """Seconds until one token is available (0 when one is)."""
        self.tokens = min(self.size, self.tokens + (now - self.at) * self.rate)
        self.at = now
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / self.rate

    def take(self) -> None:
        self.tokens -= 1.0


class KeyedBuckets:
    """One bucket of ``per_minute`` per key, the least recently used forgotten past
    ``max_keys`` (a forgotten key starts full again: memory is bounded, not the rate)."""

    def __init__(self, per_minute: int, *, max_keys: int = 100_000) -> None:
        self.per_minute = per_minute
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, Bucket] = OrderedDict()

    def get(self, key: str, now: float) -> Bucket | None:
        """The key's bucket (None when this limit is disabled)."""
        if self.per_minute <= 0:
            return None
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = Bucket(self.per_minute, now)
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket


def admit(buckets: tuple[Bucket | None, ...], now: float) -> int:
    """0 if every bucket has a token (and each gives one), else whole seconds to wait."""
    waits = max((b.wait(now) for b in buckets if b is not None), default=0.0)
    if waits > 0:
        return max(1, math.ceil(waits))
    for bucket in buckets:
        if bucket is not None:
            bucket.take()
    return 0


class RateLimits:
    """The door's two ceilings: per sender, and for the whole door."""

    def __init__(self, per_sender: int, total: int, *, max_senders: int = 100_000) -> None:
        self.per_sender = per_sender
        self.total_rate = total
        self._senders = KeyedBuckets(per_sender, max_keys=max_senders)
        self._total: Bucket | None = None

    def check(self, sender: str, now: float) -> int:
        """0 if allowed (and counted), else whole seconds to wait (for ``Retry-After``)."""
        if self.total_rate > 0 and self._total is None:
            self._total = Bucket(self.total_rate, now)
        return admit((self._senders.get(sender, now), self._total), now)
