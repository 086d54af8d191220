"""Versioned schemas: each store lists its migrations; the database records where it stands.

A store's tables carry one row in ``muretai_schema`` (store name, version). ``init`` brings
an empty place to the newest version, ``upgrade`` applies what is missing, and ``require``
refuses a database whose version this program does not know, naming the command that fixes
it. Migrations are portable scripts (see ``render_ddl``); each runs in one exclusive
transaction, so two processes upgrading at once apply it once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from muretai_cli.db._core import Database, Dialect, SchemaMismatch, render_ddl, statements

Migration = str | Mapping[Dialect, str]

VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS muretai_schema (store TEXT PRIMARY KEY, version {int} NOT NULL)
"""


@dataclass(frozen=True, slots=True)
class Schema:
    """A store's schema: ``migrations[i]`` takes version ``i`` to ``i + 1``.

    A migration is one portable script, or one per dialect where the engines' histories
    differ (a SQLite file older than this layer, say).
    """

    store: str
    migrations: tuple[Migration, ...]

    def script(self, version: int, dialect: Dialect) -> str:
        """The migration from ``version`` to ``version + 1`` for ``dialect``."""
        step = self.migrations[version]
        return render_ddl(step if isinstance(step, str) else step[dialect], dialect)

    @property
    def latest(self) -> int:
        return len(self.migrations)


def version_of(db: Database, schema: Schema) -> int:
    """The recorded version (0: no such store here yet)."""
    if db.dialect == "postgresql":
        row = db.one("SELECT to_regclass('muretai_schema') IS NOT NULL")
        if not row or not row[0]:
            return 0
    else:
        row = db.one("SELECT 1 FROM sqlite_master WHERE type='table' AND name='muretai_schema'")
        if row is None:
            return 0
    found = db.one("SELECT version FROM muretai_schema WHERE store=?", (schema.store,))
    return int(found[0]) if found else 0


def upgrade(db: Database, schema: Schema) -> tuple[int, int]:
    """Apply the missing migrations; returns (from, to). Refuses a newer-than-known schema.

    A database already at the latest version is only read: opening a SQLite store (which
    upgrades it) then takes no write lock and commits nothing, so it neither waits behind a
    writer nor wakes every watcher of the file (``Database.changes``)."""
    db.ensure_namespace()
    current = version_of(db, schema)
    if current == schema.latest:  # every SQLite open comes here: a read, no write lock
        return current, current
    with db.transaction() as tx:
        for stmt in statements(render_ddl(VERSION_TABLE, db.dialect)):
            tx.execute(stmt)
        row = tx.one("SELECT version FROM muretai_schema WHERE store=?", (schema.store,))
        before = int(row[0]) if row else 0
        if before > schema.latest:
            raise _too_new(db, schema, before)
        for version in range(before, schema.latest):
            for stmt in statements(schema.script(version, db.dialect)):
                tx.execute(stmt)
        tx.execute("INSERT INTO muretai_schema (store, version) VALUES (?, ?) ON CONFLICT "
                   "(store) DO UPDATE SET version=excluded.version",
                   (schema.store, schema.latest))
    return before, schema.latest


def require(db: Database, schema: Schema, *, fix: str) -> None:
    """Refuse to work on a database whose schema is absent, older or newer than known.

    ``fix`` is the command line (without ``init``/``upgrade``) that names this database,
    e.g. ``muretai db --db URL --as NAME``.
    """
    found = version_of(db, schema)
    if found == schema.latest:
        return
    if found == 0:
        raise SchemaMismatch(
            "no-schema", f"{db.describe()} holds no {schema.store} store yet",
            hint=f"create it with `{fix.format(verb='init')}`",
            data={"schemaVersion": 0, "expected": schema.latest})
    if found < schema.latest:
        raise SchemaMismatch(
            "old-schema", f"{db.describe()} holds a {schema.store} store at schema version "
            f"{found}; this program needs {schema.latest}",
            hint=f"upgrade it with `{fix.format(verb='upgrade')}`",
            data={"schemaVersion": found, "expected": schema.latest})
    raise _too_new(db, schema, found)


def _too_new(db: Database, schema: Schema, found: int) -> SchemaMismatch:
    return SchemaMismatch(
        "unknown-schema", f"{db.describe()} holds a {schema.store} store at schema version "
        f"{found}, newer than this program knows ({schema.latest})",
        hint="run a muretai at least as new as the one that upgraded it",
        data={"schemaVersion": found, "expected": schema.latest})
