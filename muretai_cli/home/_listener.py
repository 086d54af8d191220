"""The relay listener's lease: at most one process per identity listens at its relay.

An exclusive ``flock`` on ``$MURETAI_HOME/listeners/<key>.lock``. The operating system
releases it when the holder's process ends, however it ends (a follower killed with
SIGKILL frees it at once), so there is no stale lease to clear. The holder writes its name
(``host:pid:start``) into the file, for the person who asks who holds it.

Within one process the lease is not re-entrant: a second ``hold_listener`` while this
process holds it answers None too (one thread of a process listens; the others read the
store). Across machines sharing one PostgreSQL store no file lock can help: there the
relay's epochs still decide (the newer listener supersedes the older).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Literal

from muretai_cli.errors import InputError
from muretai_cli.home._files import ensure_private_dir, home_dir

ListenerState = Literal["held", "elsewhere", "none"]

_HELD: dict[str, ListenerLease] = {}  # the leases this process holds, by DID
_GUARD = threading.Lock()
_TRIES = 3  # a lease looked at (listener_state) is held for an instant: try again


def listener_path(did: str) -> Path:
    """``$MURETAI_HOME/listeners/<key>.lock``: the identity's lease file."""
    key = did.rsplit(":", 1)[-1]
    if not key.isalnum():
        raise InputError("bad-did", f"{did[:80]!r} cannot name a listener lease")
    return home_dir() / "listeners" / f"{key}.lock"


class ListenerLease:
    """A held lease (``hold_listener``); ``release()`` or leave the ``with`` block to free it."""

    def __init__(self, did: str, fd: int) -> None:
        self.did = did
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        import fcntl

        with _GUARD:
            fd, self._fd = self._fd, None
            if _HELD.get(self.did) is self:
                del _HELD[self.did]
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> ListenerLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _open(did: str) -> int:
    path = listener_path(did)
    ensure_private_dir(path.parent)
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise InputError("unwritable", f"cannot open the listener lease {path}: "
                                       f"{exc.strerror}") from None


def hold_listener(did: str, *, holder: str | None = None) -> ListenerLease | None:
    """Take the identity's listener lease without waiting: the lease, or None when another
    process (or another part of this one) holds it. ``holder`` (default: this process as
    ``visit.turn.this_process`` names it) is written into the file for ``listener_holder``."""
    import fcntl

    with _GUARD:
        if did in _HELD:
            return None
        fd = _open(did)
        for attempt in range(_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if attempt == _TRIES - 1:
                    os.close(fd)
                    return None
                time.sleep(0.002)  # a listener_state() looking holds it for two syscalls
        name = (holder or f"{os.uname().nodename}:{os.getpid()}").encode()[:200]
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, name, 0)
        lease = _HELD[did] = ListenerLease(did, fd)
        return lease


def listener_state(did: str) -> ListenerState:
    """``held`` (this process holds it), ``elsewhere`` (another process does) or ``none``."""
    import fcntl

    with _GUARD:
        if did in _HELD:
            return "held"
        path = listener_path(did)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return "none"  # never taken, or unreadable: nobody can be holding this file
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return "elsewhere"
        finally:
            os.close(fd)  # closing drops the shared lock taken to look
        return "none"


def listener_holder(did: str) -> str | None:
    """Who last took the lease (its own words, at most 200 bytes), or None."""
    try:
        text = listener_path(did).read_bytes()[:200].decode("utf-8", "replace")
    except OSError:
        return None
    return text or None
