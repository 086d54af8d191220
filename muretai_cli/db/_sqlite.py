"""The SQLite backend: one file, WAL, one connection per ``Database``.

Write transactions start with ``BEGIN IMMEDIATE`` (one writer per file, across processes:
what a transaction read stays true until it commits). WAL with ``synchronous=NORMAL``
keeps every committed transaction through a process crash; ``durable=True`` uses ``FULL``
so a commit also survives power loss. Not thread-safe: one owner (an event loop or a command).

What SQLite says goes through ``_failure``: a full disk is ``DatabaseFull`` (never "move it
aside"), a path that cannot be opened names why, a damaged file says so. A write its storage
refuses (EIO, EFBIG, a quota) is ``storage-unavailable`` (503, exit 3) and a table or column
gone from the file is ``StoreDamaged``: neither is the caller's path at fault. A text value that is
not UTF-8 (a damaged row) does not make a whole read fail: the read is done again with such
values as ``Undecodable`` (U+FFFD where bytes do not decode), which stores show as damaged.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from muretai_cli.db._core import (
    Changes,
    Conflict,
    Database,
    DatabaseFull,
    DatabaseUnavailable,
    Params,
    Result,
    StoreDamaged,
    Tx,
    Undecodable,
    statements,
    storage_failed,
)
from muretai_cli.db._wake import Announcer, Doorbell
from muretai_cli.errors import InputError, MuretaiError
from muretai_cli.home import ensure_private_dir

BUSY_TIMEOUT = 10.0
# How often a watch asks the file whether anyone committed: a wake within this of a commit
# that rang no bell (``_wake``), for one cheap PRAGMA (no disk read: the WAL index in shared
# memory) per tick. A commit that rings wakes it at once.
WATCH_INTERVAL = 0.01
WAL_RETRY = 0.005  # between tries to turn a new file to WAL while another connection does
_DAMAGED = ("SQLITE_NOTADB", "SQLITE_CORRUPT")
# This says the storage refused (SQLite maps EIO, EFBIG and EDQUOT on a write to
# SQLITE_IOERR_*; ENOSPC alone to SQLITE_FULL), not that the path is wrong. A permission
# (CANTOPEN, READONLY, PERM) stays the path's: the owner fixes the mode, not the disk.
_STORAGE = "SQLITE_IOERR"
_MISSING = ("no such table", "no such column")


def _tolerant_text(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return Undecodable(raw.decode("utf-8", "replace"))


def _undecodable(exc: sqlite3.Error) -> bool:
    return str(exc).startswith("Could not decode to UTF-8")


def _failure(exc: sqlite3.Error, path: Path) -> MuretaiError | None:
    """What an engine error means for people, or None for a programming error (re-raised).

    An I/O error is the storage's doing (503, exit 3), a missing table damage: neither says
    the path is wrong, so neither gets the hint to fix the path."""
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    if name == "SQLITE_FULL" or "disk is full" in text:
        return DatabaseFull(path)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text or "busy" in text:
        return DatabaseUnavailable("database-busy", text)
    if name.startswith(_STORAGE):
        if path.is_dir():
            return _is_directory(path)
        # ENOSPC while growing the shared-memory index (SQLITE_IOERR_SHMSIZE) or a WAL write
        # comes back as an I/O error; a disk with no free block is still a full disk.
        return DatabaseFull(path) if _no_space(path) else storage_failed(path, f"{text}, {name}")
    if text.startswith(_MISSING):
        return StoreDamaged(path, text)
    if name.startswith(_DAMAGED):
        return InputError("bad-database", f"{path} is not a usable database ({text})",
                          hint="move it aside; a new one is started in its place")
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM",
                        "SQLITE_AUTH")):
        if path.is_dir():
            return _is_directory(path)
        return InputError("bad-database", f"cannot use the database {path} ({text})",
                          hint="check that the file and its folder are yours and writable")
    return None


def _no_space(path: Path) -> bool:
    """Whether the filesystem holding ``path`` has no block left for an ordinary user."""
    try:
        return os.statvfs(path.parent).f_bavail == 0
    except OSError:
        return False


def _is_directory(path: Path) -> InputError:
    return InputError("bad-database", f"{path} is a directory, not a database file",
                      hint="rename that directory, or give --db another file path")


class _SqliteTx(Tx):
    __slots__ = ("_db", "_path")

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self._path = path

    def execute(self, sql: str, params: Params = ()) -> Result:
        try:
            try:
                cur = self._db.execute(sql, params)
                return Result(cur.fetchall(), cur.rowcount)
            except sqlite3.OperationalError as exc:
                # A read met a value that is not UTF-8: read again, marking such values.
                if not _undecodable(exc) or not sql.lstrip()[:6].upper() == "SELECT":
                    raise
                self._db.text_factory = _tolerant_text
                try:
                    cur = self._db.execute(sql, params)
                    return Result(cur.fetchall(), cur.rowcount)
                finally:
                    self._db.text_factory = str
        except sqlite3.IntegrityError as exc:
            raise Conflict("conflict", str(exc)) from None
        except sqlite3.Error as exc:
            failure = _failure(exc, self._path)
            if failure is None:
                raise
            raise failure from None


class _DataVersion(Changes):
    """SQLite's watch: ``PRAGMA data_version``, read when a writer's commit rings the
    watch's bell (``_wake``) and every ``WATCH_INTERVAL`` in any case. The bell is opened
    when the watch first has to wait (a wait that returns at once needs none), and the
    version read again once it is open: no commit slips between."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self._path = path
        self._bell: Doorbell | None = None
        self._seen = self._version()

    def _version(self) -> int:
        try:
            row = self._conn.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error as exc:
            failure = _failure(exc, self._path)
            if failure is None:
                raise
            raise failure from None
        return int(row[0])

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            now = self._version()
            if now != self._seen:
                self._seen = now
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self._bell is None:
                self._bell = Doorbell(self._path)
                continue  # read the version again: a commit before the bell was open
            self._bell.wait(min(WATCH_INTERVAL, left))

    def close(self) -> None:
        if self._bell is not None:
            self._bell.close()


_WAL_FILES = ("-wal", "-shm")  # beside a database in WAL mode, holding its latest writes


def _into_wal(conn: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, waiting as long as any lock for a connection that is
    turning the same new file to WAL (or writing it) meanwhile.

    Turning a new file to WAL takes its exclusive lock from inside a read, where SQLite never
    calls the busy handler: two processes or threads opening one new store at once (the MCP
    server's watcher and drain beside a command) had one fail at once with ``database is
    locked``. Once the file is WAL the pragma only reads."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            name = getattr(exc, "sqlite_errorname", "")
            if not name.startswith("SQLITE_BUSY") or time.monotonic() >= deadline:
                raise
        time.sleep(WAL_RETRY)


def _create_private(path: Path) -> None:
    """A new database file, empty and 600, before SQLite opens it (SQLite gives the -wal and
    -shm files it makes the database file's mode, so they are 600 from their first byte).

    An existing file is never opened here. SQLite's locks on a file are POSIX locks, held per
    process and inode, and closing ANY descriptor of the file drops every one the process
    holds on it: a store opened beside another of the same process (the MCP server's watcher,
    drain and tool calls) took the other's shared lock away, so another process closing its
    connection believed it was the last, checkpointed and deleted the WAL still in use here
    (then ``database is locked``, ``SQLITE_IOERR_SHORT_READ``, a malformed file). So the file
    is made under a name of its own and linked into place once that descriptor is closed.
    (If it cannot be made, SQLite creates it or says why.)"""
    if path.exists():
        return
    spare = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.new")
    try:
        os.close(os.open(spare, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
        try:
            os.link(spare, path)
        except FileExistsError:  # another process or thread made it meanwhile
            pass
        except OSError:  # a filesystem without hard links: made in place, never reopened
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return
    finally:
        with contextlib.suppress(OSError):
            os.unlink(spare)


class SqliteDatabase(Database):
    dialect = "sqlite"

    def __init__(self, path: Path, *, durable: bool = False) -> None:
        ensure_private_dir(path.parent)
        self.path = path
        if path.is_dir():  # sqlite3 would say only "unable to open database file"
            raise _is_directory(path)
        _create_private(path)
        self._announcer = Announcer(path)
        try:
            self._db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT,
                                       check_same_thread=False, cached_statements=256)
        except sqlite3.Error as exc:
            raise (_failure(exc, path) or InputError(
                "bad-database", f"cannot open the database {path} ({exc})")) from None
        try:
            _into_wal(self._db)
            self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            for private in (path, *(path.with_name(path.name + end) for end in _WAL_FILES)):
                if private.exists():  # made 644 by an earlier release
                    private.chmod(0o600)
        except (sqlite3.Error, OSError) as exc:
            self._db.close()
            raise self._open_failure(exc) from None
        self._auto = _SqliteTx(self._db, path)

    def _open_failure(self, exc: sqlite3.Error | OSError) -> MuretaiError:
        if isinstance(exc, OSError):
            return InputError("bad-database", f"cannot use the database {self.path}: "
                                              f"{exc.strerror}")
        return _failure(exc, self.path) or InputError(
            "bad-database", f"{self.path} is not a usable database ({exc})",
            hint="move it aside; a new one is started in its place")

    @contextmanager
    def transaction(self, *, exclusive: bool = True) -> Iterator[Tx]:
        # Every write transaction is IMMEDIATE on SQLite: it has one writer per file anyway,
        # and a deferred one that upgrades to writing can fail with SQLITE_BUSY halfway.
        del exclusive
        before = self._db.total_changes
        self._auto.execute("BEGIN IMMEDIATE")
        try:
            yield self._auto
        except BaseException:
            if self._db.in_transaction:  # SQLite may have rolled back itself (a full disk)
                self._db.execute("ROLLBACK")
            raise
        try:
            self._auto.execute("COMMIT")
        finally:
            if self._db.in_transaction:  # a COMMIT that failed leaves nothing half-done
                self._db.execute("ROLLBACK")
        if self._db.total_changes != before:  # committed a change: its waiters look now
            self._announcer.announce()

    def execute(self, sql: str, params: Params = ()) -> Result:
        before = self._db.total_changes
        result = self._auto.execute(sql, params)
        if self._db.total_changes != before and not self._db.in_transaction:
            self._announcer.announce()  # an autocommit statement that changed a row
        return result

    def run_script(self, ddl: str) -> None:
        with self.transaction() as tx:
            for stmt in statements(ddl):
                tx.execute(stmt)

    def ensure_namespace(self) -> None:
        return None

    @contextmanager
    def changes(self) -> Iterator[Changes]:
        # A connection of its own: ``data_version`` moves for every other connection's
        # commit, this store's own included.
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._open_failure(exc) from None
        try:
            watch = _DataVersion(conn, self.path)
        except BaseException:
            conn.close()
            raise
        try:
            yield watch
        finally:
            watch.close()
            conn.close()

    def close(self) -> None:
        self._announcer.close()
        self._db.close()

    def describe(self) -> str:
        return str(self.path)
