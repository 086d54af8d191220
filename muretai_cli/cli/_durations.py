"""Durations as people write them: ``90``, ``1.5s``, ``5m``, ``2.5h``, ``7d``, ``1w``."""

from __future__ import annotations

import re

from muretai_cli.errors import InputError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,6})?)([smhdw]?)")
MAX_SECONDS = 100 * 365 * 86400
LIFETIME_EXAMPLES = "30m, 1.5h, 7d, 2w"
TIMEOUT_EXAMPLES = "10, 1.5s, 2m"


def _seconds(text: str, name: str, examples: str) -> float:
    """Seconds in ``text``: a number (decimals allowed) and an optional unit s/m/h/d/w."""
    value = text.strip().lower() if isinstance(text, str) else ""
    match = _DURATION.fullmatch(value)
    if not match:
        raise InputError("bad-duration", f"{name} {str(text)[:40]!r} is not a duration",
                         hint=f"write a number with s, m, h, d or w (e.g. {examples})")
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if not 0 < seconds <= MAX_SECONDS:
        raise InputError("bad-duration", f"{name} {text!r} must be more than 0 and at most "
                                         "100 years", hint=f"e.g. {examples}")
    return seconds


def parse_duration(text: str, *, name: str = "duration",
                   examples: str = LIFETIME_EXAMPLES) -> int:
    """Whole seconds in ``text`` (``1.5h`` is 5400), for lifetimes; no unit = seconds.

    Zero, negatives, anything under a second or over a hundred years are ``InputError``.
    """
    seconds = _seconds(text, name, examples)
    if seconds < 1:
        raise InputError("bad-duration", f"{name} {text!r} is under a second",
                         hint=f"e.g. {examples}")
    return round(seconds)


def parse_seconds(text: str, *, name: str = "--timeout") -> float:
    """A timeout: seconds (``1.5``) or a duration with a unit (``1.5s``, ``2m``)."""
    return _seconds(text, name, TIMEOUT_EXAMPLES)


def parse_moment(text: str, *, now: int, name: str = "--valid-until") -> int:
    """A point in time: an epoch second (all digits), or a duration from ``now`` (``30d``)."""
    value = text.strip() if isinstance(text, str) else ""
    if value.isdigit() and len(value) <= 12:
        return int(value)
    return now + parse_duration(value, name=name)
