"""The interface every store writes against, and what both backends share.

A store writes portable SQL with ``?`` placeholders and runs it inside ``transaction()``;
the backend translates placeholders, opens the transaction its engine needs for the same
guarantee, commits, or rolls back on any exception. Errors of the engine reach the store as
the errors below, never as ``sqlite3`` or ``psycopg`` types:

    DatabaseUnavailable   (a StorageUnavailable) nothing committed; servers answer 503, exit 3
    ├── DatabaseFull      its disk is full: ``disk-full``
    ├── (storage-unavailable) a write the storage refused: EIO, a file-size limit, a quota
    └── StoreDamaged      a table or column of the schema is missing: ``bad-database``, exit 2
    Conflict              a unique key refused a write; the transaction rolled back
    Unstorable            a value the engine cannot hold (a NUL in PostgreSQL text), exit 2
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from muretai_cli.errors import (
    DiskFull,
    InputError,
    MuretaiError,
    StorageUnavailable,
    storage_unavailable,
)

Dialect = Literal["sqlite", "postgresql"]
# The PostgreSQL channel a store's commits are announced on (payload: the store's schema),
# by its schema's triggers inside the committing transaction (``Database.changes``).
CHANGES_CHANNEL = "muretai_store"
Params = Sequence[Any]
Row = tuple[Any, ...]


class DatabaseUnavailable(StorageUnavailable):
    """The database cannot be reached or answered with a failure: nothing was committed.

    A server answers HTTP 503 and retries on the next request; a command exits 3.
    """

    exit_code = 3


def storage_failed(where: object, why: str) -> DatabaseUnavailable:
    """A write the database's storage refused (EIO, EFBIG, a quota, a read-only file): not
    the file's fault, so ``storage-unavailable`` (503, exit 3), never ``bad-database``."""
    said = storage_unavailable(where, why)
    return DatabaseUnavailable(said.code, said.detail, hint=said.hint)


class StoreDamaged(DatabaseUnavailable):
    """The database lacks a table or column its schema version promises (dropped or altered
    by hand): the store cannot serve, nothing was committed. A server answers 503 and says
    why in its log; a command exits 2 with the fix."""

    exit_code = 2

    def __init__(self, where: object, why: str) -> None:
        super().__init__("bad-database", f"the database {where} is damaged: {why}",
                         hint="restore it from a backup, or move it aside (a new one is "
                              "started in its place)")


class DatabaseFull(DatabaseUnavailable):
    """The disk holding the database is full: nothing was committed. ``disk-full``, as
    ``errors.DiskFull`` says it for files; a server answers 503 as for any unavailability."""

    def __init__(self, where: object) -> None:
        full = DiskFull(where)
        super().__init__(full.code, full.detail, hint=full.hint)


class Unstorable(InputError):
    """A value the engine cannot hold (PostgreSQL text with a NUL byte): nothing was written.
    The input's fault, so a server answers 400 and a command exits 2."""

    def __init__(self, why: str) -> None:
        super().__init__("unstorable-value", f"the database cannot store this value: {why}",
                         hint="send text without NUL (U+0000) characters")


class Conflict(MuretaiError):
    """A uniqueness or integrity rule refused a write; the transaction was rolled back."""

    exit_code = 1


class Undecodable(str):
    """A text value a SQLite file held that is not UTF-8 (a damaged row), with U+FFFD where
    its bytes do not decode. Stores mark the row it came from as damaged (``damaged()``)."""

    __slots__ = ()


def damaged(row: Sequence[Any]) -> bool:
    """Whether a row holds a value that was not UTF-8 on disk."""
    return any(isinstance(value, Undecodable) for value in row)


class SchemaMismatch(InputError):
    """The database's schema version is not the one this program knows (exit 2, with the fix)."""


@dataclass(frozen=True, slots=True)
class Result:
    """The rows a statement returned (all fetched) and how many rows it changed."""

    rows: list[Row]
    rowcount: int

    def one(self) -> Row | None:
        return self.rows[0] if self.rows else None

    def scalar(self) -> Any:
        return self.rows[0][0] if self.rows else None


class Tx(ABC):
    """One open transaction (or one autocommit statement, for ``Database.execute``)."""

    @abstractmethod
    def execute(self, sql: str, params: Params = ()) -> Result: ...

    def one(self, sql: str, params: Params = ()) -> Row | None:
        return self.execute(sql, params).one()

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        return self.execute(sql, params).rows


class Changes(ABC):
    """A watch on what any process commits to one store's database (``Database.changes``).

    Open it BEFORE reading what it guards, then read, then ``wait``: a commit made between
    the read and the wait still wakes it. A wake may be for nothing (another table, another
    store on the same server): the caller reads again, which costs one query.
    """

    @abstractmethod
    def wait(self, timeout: float) -> bool:
        """Block until a commit may have happened since the watch opened or last woke (True),
        or ``timeout`` seconds passed without one (False)."""


class Database(ABC):
    """One store's database: a SQLite file or a PostgreSQL schema reached through a pool.

    ``transaction()`` is the only way to write more than one statement. With
    ``exclusive=True`` (the default) write transactions of one store run one at a time, as
    SQLite's ``BEGIN IMMEDIATE`` makes them: what a transaction read stays true until it
    commits. ``exclusive=False`` is for transactions whose correctness rests on unique
    keys and single-statement conditions alone (an ``INSERT ... ON CONFLICT``, an ``UPDATE
    ... WHERE used < uses``): on PostgreSQL they then run side by side in READ COMMITTED.
    """

    dialect: Dialect
    connections = 1  # how many threads may use this at once (a pool's size)
    # Declared, not sniffed: the engine runs a whole batch as one statement over one JSON
    # parameter (``json_to_recordset``, ``ROWS FROM ... WITH ORDINALITY``), under locks a
    # transaction takes by key (``pg_advisory_xact_lock``): PostgreSQL.
    json_batches = False
    # ... and a transaction can signal other processes, heard only if it commits (NOTIFY)
    notifies = False

    @abstractmethod
    def transaction(self, *, exclusive: bool = True) -> AbstractContextManager[Tx]: ...

    @abstractmethod
    def execute(self, sql: str, params: Params = ()) -> Result:
        """One statement in its own transaction (reads, and single-statement writes)."""

    def one(self, sql: str, params: Params = ()) -> Row | None:
        return self.execute(sql, params).one()

    def all(self, sql: str, params: Params = ()) -> list[Row]:
        return self.execute(sql, params).rows

    def execute_each(self, statements: Sequence[tuple[str, Params]]) -> list[Result]:
        """Several statements, each in its own transaction as ``execute`` runs one, in order
        (on PostgreSQL through one connection); their results. The first that fails stops
        the rest."""
        return [self.execute(sql, params) for sql, params in statements]

    @abstractmethod
    def run_script(self, ddl: str) -> None:
        """Run schema statements (``;``-separated) in one transaction."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def describe(self) -> str:
        """Where this is, for people: a path, or a URL without its password."""

    @abstractmethod
    def ensure_namespace(self) -> None:
        """Create the place the store's tables live in (a PostgreSQL schema; nothing on SQLite)."""

    @abstractmethod
    def changes(self) -> AbstractContextManager[Changes]:
        """A watch on commits to this store by any process: SQLite reads ``PRAGMA
        data_version`` (cheap, changes only when another connection commits) when a commit
        rings the watch's bell (``_wake``) and at each poll tick in any case, PostgreSQL
        LISTENs for the ``NOTIFY`` the schema's triggers send in the committing transaction."""

    @contextmanager
    def batch(self, *, exclusive: bool = True) -> Iterator[Database]:
        """One transaction for many store calls (one commit instead of one per call).

        Yields a ``Database`` whose every statement runs in that transaction and whose own
        ``transaction()`` is a savepoint in it: an exception there undoes that part alone,
        as it would have undone its own transaction. Commits when the block ends; an
        exception out of the block rolls the whole batch back.
        """
        with self.transaction(exclusive=exclusive) as tx:
            yield _InTransaction(self, tx)

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _InTransaction(Database):
    """``Database.batch``'s view: the outer database's statements, all in one transaction."""

    def __init__(self, outer: Database, tx: Tx) -> None:
        self.dialect = outer.dialect
        self.json_batches = outer.json_batches
        self.notifies = outer.notifies
        self._outer = outer
        self._tx = tx
        self._depth = 0

    @contextmanager
    def transaction(self, *, exclusive: bool = True) -> Iterator[Tx]:
        del exclusive  # the batch's own transaction holds whatever lock it took
        self._depth += 1
        name = f"muretai_sp{self._depth}"
        self._tx.execute(f"SAVEPOINT {name}")
        try:
            yield self._tx
        except BaseException:
            self._tx.execute(f"ROLLBACK TO SAVEPOINT {name}")
            self._tx.execute(f"RELEASE SAVEPOINT {name}")
            raise
        finally:
            self._depth -= 1
        self._tx.execute(f"RELEASE SAVEPOINT {name}")

    def execute(self, sql: str, params: Params = ()) -> Result:
        return self._tx.execute(sql, params)

    def run_script(self, ddl: str) -> None:
        for stmt in statements(ddl):
            self._tx.execute(stmt)

    def close(self) -> None:
        raise RuntimeError("a batch's database is closed by its owner, not inside the batch")

    def describe(self) -> str:
        return self._outer.describe()

    def ensure_namespace(self) -> None:
        self._outer.ensure_namespace()

    def changes(self) -> AbstractContextManager[Changes]:
        raise RuntimeError("a batch cannot wait for commits: it would wait on itself")


def padded_chunks(values: Sequence[Any], size: int) -> Iterator[list[Any]]:
    """``values`` as the parameters of a statement written for exactly ``size`` of them
    (one statement text, prepared once), ``size`` at a time: the last chunk is padded with
    NULL, which an ``=`` or ``IN`` matches nothing against."""
    for start in range(0, len(values), size):
        chunk = list(values[start:start + size])
        yield chunk + [None] * (size - len(chunk))


def json_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as one JSON array of objects: a whole batch as one parameter of one statement
    (PostgreSQL's ``json_to_recordset``)."""
    return json.dumps([dict(zip(columns, row, strict=True)) for row in rows],
                      ensure_ascii=False, separators=(",", ":"))


def lock_key(name: str) -> int:
    """A signed 64-bit PostgreSQL advisory-lock key for a name (stable across processes)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


@functools.lru_cache(maxsize=512)
def to_format_style(sql: str) -> str:
    """``?`` placeholders to psycopg's ``%s`` (and a literal ``%`` to ``%%``), quotes respected."""
    out: list[str] = []
    quoted = False
    for ch in sql:
        if ch == "'":
            quoted = not quoted
            out.append(ch)
        elif ch == "?" and not quoted:
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    return "".join(out)


# Column types that differ between the engines, written as placeholders in a schema script.
_DDL_TYPES: dict[Dialect, dict[str, str]] = {
    "sqlite": {"{serial}": "INTEGER PRIMARY KEY", "{int}": "INTEGER", "{blob}": "BLOB",
               "{unlogged}": ""},
    "postgresql": {"{serial}": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
                   "{int}": "BIGINT", "{blob}": "BYTEA", "{unlogged}": "UNLOGGED"},
}
_DDL_TOKEN = re.compile(r"\{(serial|int|blob|unlogged)\}")


def render_ddl(ddl: str, dialect: Dialect) -> str:
    """A schema script with ``{serial}``, ``{int}``, ``{blob}``, ``{unlogged}`` for ``dialect``."""
    types = _DDL_TYPES[dialect]
    return _DDL_TOKEN.sub(lambda m: types[m.group(0)], ddl)


def statements(script: str) -> Iterator[str]:
    """The statements of a schema script: split on ``;`` at the end of a line."""
    for part in re.split(r";\s*(?:\n|$)", script):
        if part.strip():
            yield part.strip()
