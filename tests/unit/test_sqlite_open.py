"""Opening a SQLite store beside the connections already on its file: turning a new file to
WAL waits for a connection that holds it, and opening a store already at the latest schema
takes no write lock and commits nothing (so it neither waits behind a writer nor wakes a
watcher). The rule that a second open in one process leaves the first its POSIX locks needs
a second process: ``tests/e2e/test_db.py``."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from muretai_cli.db import DatabaseUnavailable, _sqlite


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

