"""The SQLite backend: one file, WAL, one connection per ``Database``.

Write transactions start with ``BEGIN IMMEDIATE`` (one writer per file, across processes:
what a transaction read stays true until it commits). WAL with ``synchronous=NORMAL``
keeps every committed transaction through a process crash; ``durable=True`` uses ``FULL``
so a commit also survives power loss. Not thread-safe: one owner (an event loop or a command).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from muretai_cli.db._core import (
    Conflict,
    Database,
    DatabaseUnavailable,
    Params,
    Result,
    Tx,
    statements,
)
from muretai_cli.errors import InputError
from muretai_cli.home import ensure_private_dir

BUSY_TIMEOUT = 10.0


class _SqliteTx(Tx):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def execute(self, sql: str, params: Params = ()) -> Result:
        try:
            cur = self._db.execute(sql, params)
            return Result(cur.fetchall(), cur.rowcount)
        except sqlite3.IntegrityError as exc:
            raise Conflict("conflict", str(exc)) from None
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise DatabaseUnavailable("database-busy", str(exc)) from None
            raise


class SqliteDatabase(Database):
    dialect = "sqlite"

    def __init__(self, path: Path, *, durable: bool = False) -> None:
        ensure_private_dir(path.parent)
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT,
                                   check_same_thread=False, cached_statements=256)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise InputError("bad-database", f"{path} is not a usable database ({exc})",
                             hint="move it aside; a new one is started in its place") from None
        path.chmod(0o600)
        self._auto = _SqliteTx(self._db)

    @contextmanager
    def transaction(self, *, exclusive: bool = True) -> Iterator[Tx]:
        # Every write transaction is IMMEDIATE on SQLite: it has one writer per file anyway,
        # and a deferred one that upgrades to writing can fail with SQLITE_BUSY halfway.
        del exclusive
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise DatabaseUnavailable("database-busy", str(exc)) from None
        try:
            yield self._auto
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def execute(self, sql: str, params: Params = ()) -> Result:
        return self._auto.execute(sql, params)

    def run_script(self, ddl: str) -> None:
        with self.transaction() as tx:
            for stmt in statements(ddl):
                tx.execute(stmt)

    def ensure_namespace(self) -> None:
        return None

    def close(self) -> None:
        self._db.close()

    def describe(self) -> str:
        return str(self.path)
