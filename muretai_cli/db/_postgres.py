"""The PostgreSQL backend: a psycopg 3 connection pool, one schema per store.

Every connection's ``search_path`` is the store's own schema, so a store's SQL names its
tables plainly and one database holds many doors (``door_<key>``) and the relay beside them.
Statements run in READ COMMITTED; an exclusive transaction first takes a transaction-scoped
advisory lock named after the schema, so write transactions of one store run one at a time
across every process and machine, as ``BEGIN IMMEDIATE`` makes them on one SQLite file.
A lost server, a refused connection or an empty pool is ``DatabaseUnavailable``: the
transaction did not commit (or, if the connection broke during COMMIT, may have; a caller
never reports success for it). The pool replaces broken connections in the background.
A table or column gone from the schema is ``StoreDamaged``; a value PostgreSQL cannot hold
(text with a NUL byte, which psycopg refuses before sending) is ``Unstorable``.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql as pgsql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from muretai_cli.db._core import (
    CHANGES_CHANNEL,
    Changes,
    Conflict,
    Database,
    DatabaseFull,
    DatabaseUnavailable,
    Params,
    Result,
    StoreDamaged,
    Tx,
    Unstorable,
    lock_key,
    statements,
    to_format_style,
)

CONNECT_TIMEOUT = 3  # seconds for one connection attempt
CHECKOUT_TIMEOUT = 2.0  # seconds a request waits for a connection before answering 503
# How long the pool keeps retrying one lost connection in the background (its retries back
# off: 1 s, 2 s, 4 s...) before it gives that up; a request that finds no connection then
# starts a new attempt at once. Short, so the first request after the database is back is
# served: with an hour, the retries of a 20 s outage were 8 s apart, and a door answered
# 503 for 10 s after the database had returned.
RECONNECT_WINDOW = 2.0
POOL_SIZE = 4  # connections per process (and the door's threads that use them)
# A process that stops mid-transaction (its machine lost, frozen, cut off) must not hold a
# store's advisory lock or its rows for as long as TCP takes to notice: the server ends a
# session left idle inside a transaction after this long (no transaction of muretai waits
# on anything but the database between its statements).
IDLE_IN_TRANSACTION = "30s"
# libpq's TCP keepalives (for a server reached over TCP, unless the URL sets them): a lost
# server is noticed in about 25 s instead of the system's default of hours.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
              "keepalives_count": 3}
_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def redact(url: str) -> str:
    """The URL with any password replaced by ``***``."""
    return _PASSWORD.sub(r"\1***@", url)


def _unavailable(exc: Exception) -> DatabaseUnavailable:
    if isinstance(exc, psycopg.errors.DiskFull):
        return DatabaseFull("the PostgreSQL server's data")
    return DatabaseUnavailable("database-unavailable", f"PostgreSQL: {_first_line(exc)}",
                               hint="check that the database server is up and reachable")


# What says the server or the session is gone (the transaction did not commit): a lost
# connection, and a session the server ended for idling inside a transaction (class 25).
_AWAY = (psycopg.OperationalError, psycopg.InterfaceError,
         psycopg.errors.IdleInTransactionSessionTimeout)


_MISSING = (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


@contextmanager
def _engine_errors(where: str = "PostgreSQL") -> Iterator[None]:
    """psycopg's errors as the layer's: a unique key's ``Conflict``, a lost server's
    ``DatabaseUnavailable``, a dropped table's ``StoreDamaged``, a NUL's ``Unstorable``."""
    try:
        yield
    except psycopg.errors.IntegrityError as exc:
        raise Conflict("conflict", str(exc).strip()) from None
    except _AWAY as exc:
        raise _unavailable(exc) from None
    except _MISSING as exc:
        raise StoreDamaged(where, _first_line(exc)) from None
    except psycopg.DataError as exc:
        raise Unstorable(_first_line(exc)[:200]) from None


def _result(cur: psycopg.Cursor[Any]) -> Result:
    return Result(cur.fetchall() if cur.description is not None else [], cur.rowcount)


class _PgTx(Tx):
    __slots__ = ("_conn",)

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params = ()) -> Result:
        with _engine_errors():
            return _result(self._conn.execute(to_format_style(sql), params))


class _Notified(Changes):
    """PostgreSQL's watch: ``NOTIFY muretai_store, '<schema>'`` received on a LISTEN."""

    def __init__(self, conn: psycopg.Connection[Any], namespace: str) -> None:
        self._conn = conn
        self._namespace = namespace

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + max(0.0, timeout)
        with _engine_errors():
            while (left := deadline - time.monotonic()) > 0:
                for note in self._conn.notifies(timeout=left, stop_after=1):
                    if note.payload == self._namespace:
                        return True
        return False


class PostgresDatabase(Database):
    dialect = "postgresql"
    json_batches = True
    notifies = True

    def __init__(self, url: str, namespace: str, *, max_size: int = POOL_SIZE,
                 checkout_timeout: float = CHECKOUT_TIMEOUT) -> None:
        self.connections = max_size
        self.url = url
        self.namespace = namespace
        self._lock = lock_key(namespace)
        set_path = pgsql.SQL("SET search_path TO {}").format(pgsql.Identifier(namespace))

        def configure(conn: psycopg.Connection[Any]) -> None:
            conn.execute(set_path)
            conn.execute(f"SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION}'")

        given = conninfo_to_dict(url)
        self._pool = ConnectionPool(
            url, min_size=1, max_size=max_size, open=True, configure=configure,
            timeout=checkout_timeout, reconnect_timeout=RECONNECT_WINDOW,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT,
                    **{k: v for k, v in KEEPALIVES.items() if k not in given}},
            name=f"muretai-{namespace}")

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as conn:
                yield conn
        except (*_AWAY, PoolTimeout) as exc:
            self._drop_broken()
            raise _unavailable(exc) from None
        except DatabaseUnavailable:
            self._drop_broken()
            raise

    def _drop_broken(self) -> None:
        """After a lost connection, test the idle ones too, so one outage costs one 503."""
        with contextlib.suppress(Exception):
            self._pool.check()

    @contextmanager
    def transaction(self, *, exclusive: bool = True) -> Iterator[Tx]:
        with self._connection() as conn, conn.transaction():
            tx = _PgTx(conn)
            if exclusive:
                tx.execute("SELECT pg_advisory_xact_lock(?)", (self._lock,))
            yield tx

    def execute(self, sql: str, params: Params = ()) -> Result:
        with self._connection() as conn:
            return _PgTx(conn).execute(sql, params)

    def execute_each(self, statements: Sequence[tuple[str, Params]]) -> list[Result]:
        # one connection for all; each statement autocommits (pipeline mode would save a
        # round trip but costs the client more CPU than it saves, measured)
        with self._connection() as conn, _engine_errors():
            return [_result(conn.execute(to_format_style(sql), params))
                    for sql, params in statements]

    def run_script(self, ddl: str) -> None:
        with self.transaction() as tx:
            for stmt in statements(ddl):
                tx.execute(stmt)

    def ensure_namespace(self) -> None:
        with self._connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock,))
            conn.execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                pgsql.Identifier(self.namespace)))

    @contextmanager
    def changes(self) -> Iterator[Changes]:
        # A connection of its own, outside the pool: it sits in LISTEN for the whole wait.
        try:
            conn = psycopg.Connection.connect(self.url, autocommit=True,
                                              connect_timeout=CONNECT_TIMEOUT)
        except _AWAY as exc:
            raise _unavailable(exc) from None
        try:
            with _engine_errors():
                conn.execute(pgsql.SQL("LISTEN {}").format(pgsql.Identifier(CHANGES_CHANNEL)))
            yield _Notified(conn, self.namespace)
        finally:
            conn.close()

    def close(self) -> None:
        self._pool.close()

    def describe(self) -> str:
        return f"{redact(self.url)} (schema {self.namespace})"
