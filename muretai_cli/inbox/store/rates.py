"""Shared rate-limit counters: a fixed one-minute window per bucket, every process alike."""

from __future__ import annotations

from collections.abc import Sequence

from muretai_cli.inbox.store.base import StoreBase
from muretai_cli.inbox.store.windows import RATE_WINDOW, Limits

__all__ = ["RATE_WINDOW", "Limits", "Rates"]



class _Full(Exception):
    """Rolls back ``take_rate`` when one of its buckets is full."""


class Rates(StoreBase):
    """The ``rate`` table."""

    def take_rate(self, limits: Sequence[tuple[str, int]], now: int) -> int:
        """Count one request against every ``(bucket, per_minute)`` in this minute's window,
        all or none: 0 when admitted, else seconds until the window turns.

        Shared by every process on the store: a bucket's count in a window is exact (each
        admitted request increments it under the row's lock; refused ones do not count),
        and as a fixed window it lets up to twice the rate through across a window's edge.
        """
        win = now // RATE_WINDOW
        try:
            with self.db.transaction(exclusive=False) as tx:
                for bucket, per_minute in limits:
                    if not tx.all("INSERT INTO rate (bucket, win, used) VALUES (?, ?, 1) "
                                  "ON CONFLICT (bucket, win) DO UPDATE SET used=rate.used+1 "
                                  "WHERE rate.used < ? RETURNING used",
                                  (bucket, win, per_minute)):
                        raise _Full
        except _Full:
            return RATE_WINDOW - now % RATE_WINDOW
        return 0


    def take_rates(self, items: Sequence[tuple[Limits, int]]) -> list[int]:
        """Many ``take_rate(limits, now)`` at once, in order: each item's wait (0: admitted
        and counted). With ``json_batches`` the batch is counted together, without waiting
        for a disk flush (``bulk.count_rates``: one statement when no bucket fills);
        otherwise each item is taken in turn."""
        return self.bulk.take_rates(self, items)
