"""Durations as people write them: ``90``, ``90s``, ``5m``, ``2h``, ``7d``, ``1w``."""

from __future__ import annotations

import math
import re

from muretai_cli.errors import InputError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"([0-9]{1,9})([smhdw]?)")
MAX_SECONDS = 100 * 365 * 86400


def parse_duration(text: str, *, name: str = "duration") -> int:
    """Seconds in ``text`` (a whole number with an optional unit s/m/h/d/w; no unit = seconds).

    Zero, negatives, fractions, and anything over a hundred years are ``InputError``.
    """
    value = text.strip().lower() if isinstance(text, str) else ""
    match = _DURATION.fullmatch(value)
    if not match:
        raise InputError("bad-duration", f"{name} {str(text)[:40]!r} is not a duration",
                         hint="write a whole number with s, m, h, d or w (e.g. 30s, 7d, 2w)")
    seconds = int(match.group(1)) * _UNITS[match.group(2) or "s"]
    if not 0 < seconds <= MAX_SECONDS:
        raise InputError("bad-duration", f"{name} {text!r} must be more than 0 and at most "
                                         "100 years")
    return seconds


def parse_seconds(text: str, *, name: str = "--timeout") -> float:
    """A timeout: plain seconds (fractions allowed, e.g. ``1.5``) or a duration (``2m``)."""
    value = text.strip() if isinstance(text, str) else ""
    try:
        seconds = float(value)
    except ValueError:
        return float(parse_duration(value, name=name))
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS):
        raise InputError("bad-duration", f"{name} {text!r} must be a positive number of seconds")
    return seconds


def parse_moment(text: str, *, now: int, name: str = "--valid-until") -> int:
    """A point in time: an epoch second (all digits), or a duration from ``now`` (``30d``)."""
    value = text.strip() if isinstance(text, str) else ""
    if value.isdigit() and len(value) <= 12:
        return int(value)
    return now + parse_duration(value, name=name)
