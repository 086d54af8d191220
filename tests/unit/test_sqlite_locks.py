"""A SQLite store beside the other connections on its file (the MCP server's watcher and
drain, commands writing): turning a new file to WAL waits for a connection that holds it;
opening a store already at the latest schema takes no write lock and commits nothing (so it
neither waits behind a writer nor wakes a watcher); a watch holds no read between its polls
(a checkpoint can always empty the WAL). The rule that a second open in one process leaves
the first its POSIX locks needs a second process: ``tests/e2e/test_db.py``."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from muretai_cli.db import DatabaseUnavailable, _sqlite
from muretai_cli.inbox.store import IdentityStore, open_identity_store

DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


def test_turning_a_new_file_to_wal_waits_for_a_connection_holding_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite never calls the busy handler for the lock ``PRAGMA journal_mode=WAL`` takes on
    a new file: the open tries again (until the busy timeout) instead of failing at once."""
    path = tmp_path / "new.sqlite3"
    path.touch(mode=0o600)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another opener, between its lock and its commit
    waited: list[float] = []

    class _Clock:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(seconds: float) -> None:
            if not waited:
                holder.execute("COMMIT")  # the other opener is done
            waited.append(seconds)

    monkeypatch.setattr(_sqlite, "time", _Clock)
    db = _sqlite.SqliteDatabase(path)
    try:
        assert waited, "the open did not meet the lock it was given"
        assert db.one("PRAGMA journal_mode") == ("wal",)
    finally:
        db.close()
        holder.close()


def test_a_wal_conversion_that_never_frees_fails_after_the_busy_timeout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "held.sqlite3"
    path.touch(mode=0o600)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 0.2)
    start = time.monotonic()
    try:
        with pytest.raises(DatabaseUnavailable) as failed:
            _sqlite.SqliteDatabase(path)
        assert failed.value.code == "database-busy"
        assert time.monotonic() - start >= 0.2
    finally:
        holder.close()


def test_opening_a_current_store_takes_no_write_lock_and_commits_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command opens the identity's store (created and upgraded on open): a store at the
    latest schema is only read, so an open neither waits behind a writer (here one holding
    the write lock longer than the busy timeout) nor moves ``data_version``."""
    path = tmp_path / "door.sqlite3"
    open_identity_store(DID, str(path)).close()  # created, upgraded, marked as DID's
    watcher = IdentityStore(path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a writer mid-transaction (invite accept, a drain)
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 0.05)
    try:
        with watcher.db.changes() as changes:
            store = open_identity_store(DID, str(path))
            try:
                assert store.latest_seq() == 0
            finally:
                store.close()
            assert not changes.wait(0), "opening the store committed something"
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        watcher.close()


def test_a_watch_holds_no_read_between_its_polls(tmp_path: Path) -> None:
    """A watch that kept a read open would pin its snapshot: no checkpoint could get past it,
    and the WAL would grow for as long as the MCP server runs."""
    db = _sqlite.SqliteDatabase(tmp_path / "watched.sqlite3")
    writer = _sqlite.SqliteDatabase(tmp_path / "watched.sqlite3")
    try:
        db.execute("CREATE TABLE t (x INTEGER)")
        with db.changes() as changes:
            assert not changes.wait(0)
            writer.execute("INSERT INTO t VALUES (1)")
            assert changes.wait(0)
            writer.execute("INSERT INTO t VALUES (2)")
            busy, frames, done = writer.one("PRAGMA wal_checkpoint(TRUNCATE)") or (1, 0, 0)
            assert (busy, frames, done) == (0, 0, 0), "the watch holds a read"
            assert changes.wait(0)
    finally:
        writer.close()
        db.close()


@pytest.mark.parametrize("links", [True, False])
def test_a_new_store_file_is_made_600_and_an_existing_one_is_never_opened(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, links: bool) -> None:
    """Made 600 before SQLite opens it (with or without hard links on the filesystem), no
    spare name left behind; a file that exists is left to SQLite: a descriptor of it opened
    and closed here would drop the POSIX locks this process's other connections hold."""
    import os
    import stat

    if not links:
        def refuse(*_args: object) -> None:
            raise PermissionError(1, "no hard links here")
        monkeypatch.setattr(os, "link", refuse)
    path = tmp_path / "made.sqlite3"
    _sqlite._create_private(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["made.sqlite3"]
    opened: list[object] = []
    real_open = os.open

    def spy(file: object, *args: object, **kwargs: object) -> int:
        opened.append(file)
        return real_open(file, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    _sqlite._create_private(path)
    assert opened == []
