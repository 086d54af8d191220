"""The database layer, once per backend: transactions, placeholders, conflicts, schemas."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from muretai_cli.db import (
    Conflict,
    Database,
    DatabaseUnavailable,
    Schema,
    SchemaMismatch,
    open_database,
    redact,
    require,
    to_format_style,
    upgrade,
    version_of,
)

V1 = "CREATE TABLE items (id {serial}, name TEXT NOT NULL UNIQUE, n {int} NOT NULL DEFAULT 0)"
V2 = "CREATE TABLE tags (item {int} NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (item, tag))"
ONE = Schema("test", (V1,))
TWO = Schema("test", (V1, V2))
FIX = "muretai db {verb} --db X"


def _open(backend: str) -> Database:
    return open_database(backend, namespace=f"t_{secrets.token_hex(4)}")


@pytest.fixture
def db(backend: str) -> Iterator[Database]:
    database = _open(backend)
    upgrade(database, ONE)
    yield database
    database.close()


def test_placeholders_become_format_style_outside_quotes() -> None:
    assert to_format_style("SELECT ? || '?%' WHERE a LIKE 'x%' AND b=?") == (
        "SELECT %s || '?%%' WHERE a LIKE 'x%%' AND b=%s")


def test_a_transaction_commits_and_an_exception_rolls_it_back(db: Database) -> None:
    with db.transaction() as tx:
        tx.execute("INSERT INTO items (name) VALUES (?)", ("a",))
    with pytest.raises(RuntimeError), db.transaction() as tx:
        tx.execute("INSERT INTO items (name) VALUES (?)", ("b",))
        raise RuntimeError("boom")
    assert db.all("SELECT name FROM items ORDER BY name") == [("a",)]


def test_returning_and_on_conflict_work_alike(db: Database) -> None:
    first = db.execute("INSERT INTO items (name) VALUES (?) ON CONFLICT (name) DO NOTHING "
                       "RETURNING id", ("x",))
    again = db.execute("INSERT INTO items (name) VALUES (?) ON CONFLICT (name) DO NOTHING "
                       "RETURNING id", ("x",))
    assert len(first.rows) == 1 and isinstance(first.scalar(), int)
    assert again.rows == []
    bumped = db.execute("UPDATE items SET n=n+1 WHERE name=?", ("x",))
    assert bumped.rowcount == 1


def test_a_unique_violation_is_a_conflict_and_nothing_of_the_transaction_stays(
        db: Database) -> None:
    db.execute("INSERT INTO items (name) VALUES ('dup')")
    with pytest.raises(Conflict), db.transaction() as tx:
        tx.execute("INSERT INTO items (name) VALUES ('other')")
        tx.execute("INSERT INTO items (name) VALUES ('dup')")
    assert db.all("SELECT name FROM items") == [("dup",)]


def test_exclusive_transactions_of_one_store_run_one_at_a_time(backend: str) -> None:
    """Read-modify-write from two connections loses no update (advisory lock on PostgreSQL)."""
    ns = f"t_{secrets.token_hex(4)}"
    first = open_database(backend, namespace=ns)
    upgrade(first, ONE)
    first.execute("INSERT INTO items (name) VALUES ('c')")
    second = open_database(backend, namespace=ns)

    def bump(database: Database) -> None:
        for _ in range(15):
            with database.transaction() as tx:
                n = tx.one("SELECT n FROM items WHERE name='c'")
                assert n is not None
                time.sleep(0.001)  # widen the window a lost update needs
                tx.execute("UPDATE items SET n=? WHERE name='c'", (n[0] + 1,))

    threads = [threading.Thread(target=bump, args=(d,)) for d in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert first.one("SELECT n FROM items WHERE name='c'") == (30,)
    first.close()
    second.close()


def test_schema_versions_init_upgrade_and_refusals(backend: str) -> None:
    database = _open(backend)
    with pytest.raises(SchemaMismatch) as none:
        require(database, ONE, fix=FIX)
    assert none.value.code == "no-schema" and "muretai db init --db X" in (none.value.hint or "")
    assert upgrade(database, ONE) == (0, 1)
    require(database, ONE, fix=FIX)
    with pytest.raises(SchemaMismatch) as old:
        require(database, TWO, fix=FIX)
    assert old.value.code == "old-schema" and "muretai db upgrade --db X" in (old.value.hint or "")
    assert upgrade(database, TWO) == (1, 2)
    assert version_of(database, TWO) == 2
    database.execute("INSERT INTO tags (item, tag) VALUES (1, 't')")
    with pytest.raises(SchemaMismatch) as new:
        require(database, ONE, fix=FIX)
    assert new.value.code == "unknown-schema"
    with pytest.raises(SchemaMismatch):
        upgrade(database, ONE)
    database.close()


def test_postgres_stores_keep_to_their_own_schema(pg_url: str) -> None:
    a = open_database(pg_url, namespace="t_alpha")
    b = open_database(pg_url, namespace="t_beta")
    for database in (a, b):
        upgrade(database, ONE)
    a.execute("INSERT INTO items (name) VALUES ('only-a')")
    assert b.all("SELECT name FROM items") == []
    assert "schema t_alpha" in a.describe()
    a.close()
    b.close()


def test_an_unreachable_postgres_is_unavailable_not_a_traceback(tmp_path: Path) -> None:
    from muretai_cli.db._postgres import PostgresDatabase

    database = PostgresDatabase(f"postgresql://nobody:secret@/x?host={tmp_path}", "t",
                                checkout_timeout=0.3)
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailable) as err:
        database.execute("SELECT 1")
    assert time.monotonic() - started < 10
    assert err.value.exit_code == 3
    assert "secret" not in database.describe()
    database.close()


def test_redact_hides_a_password_only() -> None:
    assert redact("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    assert redact("/a/b.sqlite3") == "/a/b.sqlite3"


def test_each_batch_is_a_view_of_its_own_and_placeholders_are_translated_once(
        tmp_path: Path) -> None:
    from muretai_cli.db import open_database, to_format_style

    db = open_database(tmp_path / "b.sqlite3", namespace="t")
    try:
        with db.batch() as first:
            pass
        with db.batch() as second:
            pass
        assert first is not second  # no view (nor its savepoint depth) outlives its batch
    finally:
        db.close()
    assert to_format_style.cache_info().maxsize == 512


def test_a_process_frozen_inside_a_transaction_holds_its_store_for_a_bounded_time(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session left idle inside a transaction (its process frozen, its machine cut off)
    is ended by the server, so the store's exclusive lock it held is free again; its own
    transaction then fails as the database being away, never as a commit."""
    from muretai_cli.db import _postgres

    monkeypatch.setattr(_postgres, "IDLE_IN_TRANSACTION", "1s")  # 30 s in production
    ns = f"t_{secrets.token_hex(4)}"
    frozen, other = open_database(pg_url, namespace=ns), open_database(pg_url, namespace=ns)
    upgrade(frozen, ONE)
    holding, thaw = threading.Event(), threading.Event()
    outcome: list[BaseException | None] = []

    def freeze() -> None:
        try:
            with frozen.transaction() as tx:  # exclusive: holds the store's advisory lock
                tx.execute("INSERT INTO items (name) VALUES ('frozen')")
                holding.set()
                thaw.wait(20)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=freeze)
    thread.start()
    try:
        assert holding.wait(10)
        start = time.monotonic()
        with other.transaction() as tx:  # waits for the lock until the server ends the other
            tx.execute("INSERT INTO items (name) VALUES ('other')")
        assert time.monotonic() - start < 10
    finally:
        thaw.set()
        thread.join()
    assert isinstance(outcome[0], DatabaseUnavailable), outcome
    assert other.all("SELECT name FROM items") == [("other",)]
    frozen.close()
    other.close()


_CHILD_WRITES = ("import sqlite3, sys\n"
                 "conn = sqlite3.connect(sys.argv[1])\n"
                 "conn.execute('INSERT INTO items (name) VALUES (?)', (sys.argv[2],))\n"
                 "conn.commit()\n"
                 "conn.close()\n")


def test_a_second_sqlite_store_in_one_process_leaves_the_first_its_locks(
        tmp_path: Path) -> None:
    """SQLite's locks are POSIX locks (per process and file): a descriptor of the file that
    is opened and closed outside SQLite drops every lock the process holds on it. Opening a
    second store of the same file (the MCP server's tool call beside its watcher) must not:
    else another process, closing its connection, finds no one else's shared lock, takes
    itself for the last, checkpoints and deletes the WAL this process still writes to
    (``database is locked``, ``SQLITE_IOERR_SHORT_READ``, a malformed file)."""
    import subprocess
    import sys

    path = tmp_path / "one.sqlite3"
    wal = path.with_name(path.name + "-wal")
    first = open_database(path, namespace="door")
    upgrade(first, ONE)
    first.execute("INSERT INTO items (name) VALUES ('first')")
    second = open_database(path, namespace="door")  # the same file, the same process
    upgrade(second, ONE)
    subprocess.run([sys.executable, "-c", _CHILD_WRITES, str(path), "child"], check=True,
                   timeout=60)
    assert wal.exists(), "another process's close took the WAL this process still has open"
    second.close()  # SQLite's own close keeps the first's locks
    subprocess.run([sys.executable, "-c", _CHILD_WRITES, str(path), "child2"], check=True,
                   timeout=60)
    assert wal.exists()
    first.execute("INSERT INTO items (name) VALUES ('after')")
    first.close()
    check = open_database(path, namespace="door")
    assert check.all("SELECT name FROM items ORDER BY id") == [
        ("first",), ("child",), ("child2",), ("after",)]
    assert check.one("PRAGMA integrity_check") == ("ok",)
    check.close()
