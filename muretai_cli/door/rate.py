"""Rate limits: signed requests per minute, per sender and for the whole door (0 disables)."""

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


class RateLimits:
    """Both ceilings; a request takes a token from each only when both have one."""

    def __init__(self, per_sender: int, total: int, *, max_senders: int = 100_000) -> None:
        self.per_sender = per_sender
        self.total_rate = total
        self.max_senders = max_senders
        self._total: Bucket | None = None
        self._senders: OrderedDict[str, Bucket] = OrderedDict()

    def check(self, sender: str, now: float) -> int:
        """0 if allowed (and counted), else whole seconds to wait (for ``Retry-After``)."""
        waits = 0.0
        bucket = None
        if self.per_sender > 0:
            bucket = self._senders.get(sender)
            if bucket is None:
                bucket = Bucket(self.per_sender, now)
                self._senders[sender] = bucket
                if len(self._senders) > self.max_senders:
                    self._senders.popitem(last=False)
            else:
                self._senders.move_to_end(sender)
            waits = bucket.wait(now)
        if self.total_rate > 0:
            if self._total is None:
                self._total = Bucket(self.total_rate, now)
            waits = max(waits, self._total.wait(now))
        if waits > 0:
            return max(1, math.ceil(waits))
        if bucket is not None:
            bucket.take()
        if self._total is not None:
            self._total.take()
        return 0
