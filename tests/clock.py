"""Time for tests: a clock a test sets and moves, given to a door or relay in this process
instead of the wall clock; and, for real server processes (which read the wall clock), a
wait until a burst fits in one rate window rather than a run that crosses a minute.

    clock = Clock(NOW)
    door = make_door(..., clock=clock)
    clock.advance(61)  # the next rate window, without waiting for it
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tests.waiting import wait_until

MINUTE = 60  # rates are per minute: a shared limit counts in wall-clock minute windows


@dataclass
class Clock:
    """Seconds since the epoch, as ``time.time`` gives them, but only moved by the test."""

    now: float

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def minute_left(seconds: float) -> None:
    """Return once at least ``seconds`` remain in the current wall-clock minute (at most a
    minute's wait): what real processes count in one rate window then stays in one."""
    assert seconds < MINUTE / 2, "a burst that needs half a minute fits no window reliably"
    wait_until(lambda: MINUTE - time.time() % MINUTE >= seconds,
               f"{seconds} s are left in this minute", timeout=MINUTE)
