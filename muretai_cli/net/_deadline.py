"""A deadline shared by all requests of one command."""

from __future__ import annotations

import time
from collections.abc import Callable


class Deadline:
    """Ends ``seconds`` after construction, on a monotonic clock."""

    __slots__ = ("_clock", "_end", "seconds")

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not seconds > 0:
            raise ValueError("a deadline is a positive number of seconds")
        self.seconds = seconds
        self._clock = clock
        self._end = clock() + seconds

    def remaining(self) -> float:
        return max(0.0, self._end - self._clock())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0
