"""SQLite's commit announcements: a watch (``Database.changes``) wakes on another
connection's commit when it lands, not at its next poll tick.

SQLite tells no other process of a commit, so a watch polls ``PRAGMA data_version`` every
``WATCH_INTERVAL``: a waiter learned of a commit up to a tick late. So each watch also opens
a ``Doorbell``: a Unix datagram socket in the store's wake folder (beside the file:
``.wake/<a hash of its name>/``), and every SQLite connection whose commit changed a row
rings each bell there (``Announcer.announce``: one byte per bell, never blocking). A ring
says only "look again": the watch still reads ``data_version``, and a writer that rings
nothing (an earlier release, the ``sqlite3`` shell, a path too long for a socket's name) is
still seen at the next tick. A bell whose waiter died without closing it is removed by the
first writer it refuses.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import socket
import time
from pathlib import Path

__all__ = ["Announcer", "Doorbell", "wake_dir"]


def wake_dir(path: Path) -> Path:
    """The folder of the bells of the store at ``path``: ``<its folder>/.wake/<hash>``."""
    return path.parent / ".wake" / hashlib.sha256(path.name.encode()).hexdigest()[:12]


def _unix_dgram() -> socket.socket | None:
    family = getattr(socket, "AF_UNIX", None)
    if family is None:
        return None
    try:
        sock = socket.socket(family, socket.SOCK_DGRAM)
    except OSError:
        return None
    sock.setblocking(False)
    return sock


class Doorbell:
    """A waiter's bell for the store at ``path``; without one (no Unix sockets, a name too
    long, a folder that cannot be made), ``wait`` only sleeps."""

    def __init__(self, path: Path) -> None:
        self._sock: socket.socket | None = None
        self._name = str(wake_dir(path) / f"{os.getpid()}-{os.urandom(4).hex()}")
        sock = _unix_dgram()
        if sock is None:
            return
        try:
            os.makedirs(os.path.dirname(self._name), mode=0o700, exist_ok=True)
            sock.bind(self._name)
        except OSError:  # a name too long for a socket (about 100 bytes), a folder refused
            sock.close()
            return
        self._sock = sock

    @property
    def open(self) -> bool:
        """Whether writers can ring this bell (else ``wait`` is a sleep)."""
        return self._sock is not None

    def wait(self, seconds: float) -> bool:
        """Up to ``seconds`` for a ring (0: only what already came); True if one came, and
        every ring that came meanwhile is taken."""
        if self._sock is None:
            time.sleep(max(0.0, seconds))
            return False
        ready, _, _ = select.select([self._sock], [], [], max(0.0, seconds))
        rang = False
        while ready:
            try:
                self._sock.recv(16)
            except OSError:  # BlockingIOError: every ring taken
                break
            rang = True
        return rang

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            with contextlib.suppress(OSError):
                os.unlink(self._name)


class Announcer:
    """A writer's side: ``announce`` rings every bell of the store at ``path``."""

    def __init__(self, path: Path) -> None:
        self._dir = str(wake_dir(path))
        self._sock: socket.socket | None = None

    def announce(self) -> None:
        """Ring every bell open on the store, never blocking, never raising: a full bell
        already has a ring waiting; a bell nobody holds any more is removed."""
        try:
            names = os.listdir(self._dir)
        except OSError:  # no folder: nobody has waited on this store
            return
        if not names:
            return
        if self._sock is None:
            self._sock = _unix_dgram()
            if self._sock is None:
                return
        for name in names:
            bell = os.path.join(self._dir, name)
            try:
                self._sock.sendto(b"!", bell)
            except ConnectionRefusedError:  # its waiter is gone without closing it
                with contextlib.suppress(OSError):
                    os.unlink(bell)
            except OSError:  # full, just closed, not a socket: nothing to ring
                pass

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
