"""The store's windows, below every table group: the rate counters (``rates``), the replay
lookups (``receipts``) and the batch SQL that does both at once (``bulk``) count by them."""

from __future__ import annotations

from collections.abc import Sequence

from muretai_cli.seam import MESSAGE_WINDOW

__all__ = ["RATE_WINDOW", "REPLAY_WINDOW", "Limits"]

RATE_WINDOW = 60  # seconds: a rate bucket's fixed window
REPLAY_WINDOW = 2 * MESSAGE_WINDOW  # a messageId is remembered as long as it could be fresh
Limits = Sequence[tuple[str, int]]  # a request's rate buckets: (bucket, per minute)
