"""Text for a terminal: untrusted text made inert (``safe``), a time for people (``when``).

Text that came from a peer passes through ``safe()`` before it reaches a terminal.
"""

from __future__ import annotations

import re

# What peer text may not bring to a terminal, each shown as '?':
# - C0/C1 controls (but tab/newline where allowed) and DEL;
# - bidi marks, embeddings, overrides and isolates (U+061C, U+200E/F, U+202A-E, U+2066-9),
#   which can make a terminal show text in another order than it is;
# - line and paragraph separators (U+2028/9), which break a "single line";
# - invisible characters that can hide text from a person but not from a model: zero width
#   space, word joiner and invisible operators, deprecated format controls, BOM, interlinear
#   annotation, soft hyphen, Hangul fillers, Mongolian vowel separator, tag characters
#   (U+E0000-E007F) and the variation selectors supplement (U+E0100-E01EF).
# ZWNJ/ZWJ (U+200C/D) and U+FE00-FE0F stay: scripts and emoji need them, and alone they hide
# nothing.
INVISIBLE = ("\u00ad\u061c\u115f\u1160\u180e\u200b\u200e\u200f\u2028\u2029"
              "\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
              "\U000e0000-\U000e007f\U000e0100-\U000e01ef")


_UNSAFE_LINE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{INVISIBLE}]")


_UNSAFE_BLOCK = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE}]")


def when(epoch: object) -> str:
    """A time for people, in one form with its zone: ``2026-11-30 19:54:13 UTC``.

    ``-`` for none (None, 0, ""), ``?`` for what is not an epoch second.
    """
    import time

    if epoch in (None, 0, ""):
        return "-"
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        return "?"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))
    except (OverflowError, OSError, ValueError):
        return "?"


def safe(text: object, *, multiline: bool = False, limit: int | None = 2000) -> str:
    """Untrusted text made inert for a terminal: controls, bidi marks, line separators and
    invisible characters (``INVISIBLE``) become '?'."""
    value = text if isinstance(text, str) else str(text)
    if limit is not None and len(value) > limit:
        value = value[:limit] + "…"
    return (_UNSAFE_BLOCK if multiline else _UNSAFE_LINE).sub("?", value)
