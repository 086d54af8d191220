"""The database layer under the stores: one interface, SQLite and PostgreSQL behind it.

    Database        a store's database: ``transaction()``, ``execute()``, ``describe()``,
                    ``changes()`` (a watch woken by any process's commit)
    ├── SqliteDatabase     one file per store (the default; unchanged files)
    └── PostgresDatabase   a schema per store in a PostgreSQL database, reached by a pool
    Schema / upgrade / require   versioned schemas (``muretai db init|upgrade``)
    DatabaseUnavailable    the database is down or its storage refused a write
                           (``storage-unavailable``: EIO, EFBIG, a quota): nothing
                           committed; servers answer 503 with Retry-After, commands exit 3
    ├── DatabaseFull       its disk is full (``disk-full``, never "move it aside")
    └── StoreDamaged       a table of its schema is missing (``bad-database``, exit 2)
    Conflict               a unique key refused a write; the transaction rolled back
    Unstorable             a value the engine cannot hold (a NUL in PostgreSQL text), exit 2
    Batcher                group commit: an event loop's requests run together on a thread

No ORM: stores write portable SQL (``?`` placeholders, ``INSERT ... ON CONFLICT``,
``RETURNING``) and this layer runs it on either engine. ``psycopg`` is imported only when a
PostgreSQL URL is opened, so a command that never touches PostgreSQL never loads it.
"""

from __future__ import annotations

from pathlib import Path

from muretai_cli.db._batch import Batcher
from muretai_cli.db._core import (
    CHANGES_CHANNEL,
    Changes,
    Conflict,
    Database,
    DatabaseFull,
    DatabaseUnavailable,
    Dialect,
    Result,
    Row,
    SchemaMismatch,
    StoreDamaged,
    Tx,
    Undecodable,
    Unstorable,
    damaged,
    json_rows,
    lock_key,
    padded_chunks,
    render_ddl,
    to_format_style,
)
from muretai_cli.db._schema import Schema, require, upgrade, version_of
from muretai_cli.errors import InputError

__all__ = [
    "CHANGES_CHANNEL",
    "Batcher",
    "Changes",
    "Conflict",
    "Database",
    "DatabaseFull",
    "DatabaseUnavailable",
    "Dialect",
    "Result",
    "Row",
    "Schema",
    "SchemaMismatch",
    "StoreDamaged",
    "Tx",
    "Undecodable",
    "Unstorable",
    "damaged",
    "is_postgres_url",
    "json_rows",
    "lock_key",
    "open_database",
    "padded_chunks",
    "redact",
    "render_ddl",
    "require",
    "to_format_style",
    "upgrade",
    "version_of",
]

DB_ENV = "MURETAI_DB"
_PG_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str | None) -> bool:
    return bool(target) and str(target).startswith(_PG_SCHEMES)


def redact(url: str) -> str:
    """A database location for people: a PostgreSQL URL loses its password."""
    if not is_postgres_url(url):
        return url
    from muretai_cli.db._postgres import redact as pg_redact

    return pg_redact(url)


def open_database(target: str | Path, *, namespace: str, durable: bool = False) -> Database:
    """A SQLite file (a path) or a PostgreSQL database (``postgresql://…``, schema ``namespace``).

    ``durable`` applies to SQLite (``synchronous=FULL``); PostgreSQL's durability is the
    server's own setting (``synchronous_commit``).
    """
    text = str(target)
    if is_postgres_url(text):
        from muretai_cli.db._postgres import PostgresDatabase

        return PostgresDatabase(text, namespace)
    if "://" in text:
        raise InputError("bad-database-url", f"unsupported database URL {redact(text)!r}",
                         hint="use postgresql://user@host/dbname, or a SQLite file path")
    from muretai_cli.db._sqlite import SqliteDatabase

    return SqliteDatabase(Path(text), durable=durable)
