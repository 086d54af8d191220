"""Many readers, one drainer: an identity's received messages read by ``seq``.

Every message that reaches an identity (a door POST, a relay drain, a claim, an approved
first contact) is committed to its inbox with a ``seq``: store-wide, strictly increasing.
A reader keeps its own cursor (the last ``seq`` it has seen) and asks for what came after:

    read_after(store, after, ...)  -> Page   entries after the cursor, in order, and ``latest``
    wait_after(store, after, ...)  -> Page   the same, waiting up to ``timeout`` seconds for one

Reading moves nobody's position: two readers with the same cursor see the same entries, and
neither takes anything from the process that holds the relay listener. ``wait_after`` returns
at once when an entry after the cursor matches; else it is woken by the commit of another
process (``Database.changes``: SQLite's ``data_version``, PostgreSQL's LISTEN/NOTIFY) and
returns what matched, or an empty page with the same ``latest`` when the time is up (not an
error). Both are blocking calls: an event loop runs them on a thread.

Seqs are committed in order (schema version 13 on PostgreSQL, one writer at a time on
SQLite): when a reader sees a seq, every smaller one that will ever be committed is already
visible, so a cursor never passes an entry committed late.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import InputError

if TYPE_CHECKING:
    from muretai_cli.inbox.store import IdentityStore

__all__ = ["READ_LIMIT", "READ_LIMIT_MAX", "WAIT_DEFAULT", "WAIT_MAX", "Page", "read_after",
           "wait_after"]

READ_LIMIT = 50  # entries a read returns unless told
READ_LIMIT_MAX = 500  # at most, in one read
WAIT_DEFAULT = 25.0  # seconds a wait waits unless told (the exchange contract's await_reply)
WAIT_MAX = 30.0  # at most


@dataclass(frozen=True, slots=True)
class Page:
    """What a read after a cursor found.

    ``entries``: received messages with ``after`` < ``seq`` <= ``latest``, oldest first, each a
    dict with the keys ``seq``, ``from``, ``messageId``, ``contextId``, ``replyTo``, ``text``
    (the peer's words: untrusted), ``timestamp``, ``received``, ``verified``, ``channel``
    (door | relay), ``via``, ``wba`` and ``damaged``. ``latest``: the highest ``seq`` the store
    held when read (the next cursor, when ``more`` is False). ``more``: the limit cut the
    entries short; read again after the last entry's ``seq``. ``waited``: a wait ended
    because its time was up.
    """

    after: int
    latest: int
    entries: tuple[dict[str, Any], ...]
    more: bool = False
    waited: bool = False

    def __post_init__(self) -> None:
        if self.after < 0 or self.latest < 0:
            raise ValueError("a seq is never negative")

    @property
    def cursor(self) -> int:
        """Where the next read starts: the last entry's ``seq``, or ``latest`` when the page
        holds every match up to it (an empty page included)."""
        if self.more and self.entries:
            return int(self.entries[-1]["seq"])
        return max(self.after, self.latest)

    def to_json(self) -> dict[str, Any]:
        return {"after": self.after, "latest": self.latest, "cursor": self.cursor,
                "more": self.more, "entries": [dict(e) for e in self.entries]}


def _checked(after: int, limit: int) -> None:
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise InputError("bad-cursor", f"a cursor is a seq (an integer >= 0), not {after!r}",
                         hint="start with 0, then give the `latest` of the last read")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= READ_LIMIT_MAX:
        raise InputError("bad-limit", f"a limit is 1 to {READ_LIMIT_MAX}, not {limit!r}",
                         hint=f"read again after the last seq for more than {READ_LIMIT_MAX}")


def checked_wait(timeout: float | None) -> float:
    """A wait's seconds: ``None`` is ``WAIT_DEFAULT``; 0 to ``WAIT_MAX``, else ``InputError``."""
    if timeout is None:
        return WAIT_DEFAULT
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) \
            or not 0 <= timeout <= WAIT_MAX:
        raise InputError("bad-wait", f"a wait is 0 to {WAIT_MAX:g} seconds, not {timeout!r}",
                         hint=f"give --wait N with N at most {WAIT_MAX:g}, then wait again")
    return float(timeout)


def read_after(store: IdentityStore, after: int = 0, *, peer: str | None = None,
               context: str | None = None, reply_to: str | None = None,
               limit: int = READ_LIMIT) -> Page:
    """The received messages after ``after`` (a ``seq``), oldest first, at most ``limit``,
    from ``peer`` (a DID), in conversation ``context`` (a contextId) and answering
    ``reply_to`` (a messageId), each None for any; and ``latest``. Moves nothing.

    Raises ``InputError`` (``bad-cursor``, ``bad-limit``) for a bad cursor or limit.
    """
    _checked(after, limit)
    latest = store.latest_seq()  # first: the entries are those up to it, none newer
    rows = store.inbox_after(after, latest, peer=peer, context=context, reply_to=reply_to,
                             limit=limit + 1)
    return Page(after=after, latest=latest, entries=tuple(rows[:limit]),
                more=len(rows) > limit)


def wait_after(store: IdentityStore, after: int = 0, *, peer: str | None = None,
               context: str | None = None, reply_to: str | None = None,
               limit: int = READ_LIMIT, timeout: float | None = None) -> Page:
    """``read_after``, waiting when nothing after ``after`` matches: until a matching entry
    is committed (by any process writing this store), or ``timeout`` seconds (None:
    ``WAIT_DEFAULT``; at most ``WAIT_MAX``) are up, when it returns an empty page with the
    ``latest`` of then and ``waited`` True. Returns at once when an entry already matches.

    Raises ``InputError`` (``bad-cursor``, ``bad-limit``, ``bad-wait``) for bad arguments,
    ``DatabaseUnavailable`` when the store cannot be watched.
    """
    _checked(after, limit)
    seconds = checked_wait(timeout)
    deadline = time.monotonic() + seconds
    with store.db.changes() as changes:  # opened before the read: no commit slips between
        while True:
            page = read_after(store, after, peer=peer, context=context, reply_to=reply_to,
                              limit=limit)
            left = deadline - time.monotonic()
            if page.entries or left <= 0:
                return page if page.entries else Page(after=after, latest=page.latest,
                                                      entries=(), waited=True)
            changes.wait(left)
