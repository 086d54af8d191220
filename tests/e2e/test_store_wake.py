"""A SQLite store's watch wakes on a commit when it lands (``db/_wake.py``), not at its next
poll tick: a commit that changed a row rings every bell open on the store; a watch waits on
its bell; a bell whose waiter died is removed; where no bell can be had, the tick stays.

Real Unix sockets and SQLite files (the unit suite opens no socket). A store's path is kept
short here (a socket's name has room for about 100 bytes), except where it is the subject.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from muretai_cli.db import _sqlite
from muretai_cli.db._sqlite import SqliteDatabase
from muretai_cli.db._wake import Doorbell, wake_dir
from tests.waiting import wait_until


@pytest.fixture
def short() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="mw", dir="/tmp") as folder:
        yield Path(folder)


def _store(path: Path) -> SqliteDatabase:
    db = SqliteDatabase(path)
    db.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    return db


def test_a_commit_that_changed_a_row_rings_every_open_bell(short: Path) -> None:
    path = short / "s.sqlite3"
    db = _store(path)
    first, second = Doorbell(path), Doorbell(path)
    try:
        assert first.open and second.open
        with db.transaction() as tx:
            tx.execute("INSERT INTO t VALUES (1)")
        assert first.wait(0) and second.wait(0)  # rung (a ring already there: no waiting)
        assert not first.wait(0)  # every ring was taken
        db.execute("INSERT INTO t VALUES (2)")  # an autocommit statement rings too
        assert first.wait(0)
        with db.transaction() as tx:  # a transaction that changed nothing rings nothing
            tx.execute("SELECT count(*) FROM t")
        db.execute("SELECT count(*) FROM t")
        assert not first.wait(0)
    finally:
        first.close()
        second.close()
        db.close()


def test_a_wait_wakes_on_a_commit_without_waiting_for_its_tick(
        short: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tick is an hour here: only the writer's ring can end the wait before it."""
    monkeypatch.setattr(_sqlite, "WATCH_INTERVAL", 3600.0)
    path = short / "s.sqlite3"
    writer, reader = _store(path), _store(path)
    waiting = threading.Event()  # the watch is in its bell's wait: a commit now is unseen yet
    ring = Doorbell.wait

    def wait(bell: Doorbell, seconds: float) -> bool:
        waiting.set()
        return ring(bell, seconds)

    monkeypatch.setattr(Doorbell, "wait", wait)
    got: list[bool] = []
    with reader.changes() as changes:
        waiter = threading.Thread(target=lambda: got.append(changes.wait(3600)), daemon=True)
        waiter.start()
        assert waiting.wait(30), "the watch never waited on its bell"
        writer.execute("INSERT INTO t VALUES (1)")
        wait_until(lambda: got, "the wait returned on the commit")
        waiter.join()
    assert got == [True]
    writer.close()
    reader.close()


def test_a_bell_whose_waiter_died_is_removed_by_the_next_commit(short: Path) -> None:
    path = short / "s.sqlite3"
    db = _store(path)
    folder = wake_dir(path)
    folder.mkdir(parents=True, exist_ok=True)
    dead = folder / "1-dead"
    orphan = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    orphan.bind(str(dead))
    orphan.close()  # a killed waiter: its socket's file stays, nobody reads it
    alive = Doorbell(path)
    try:
        db.execute("INSERT INTO t VALUES (1)")
        assert not dead.exists()
        assert alive.wait(0)  # the others were rung all the same
    finally:
        alive.close()
        db.close()
    assert os.listdir(folder) == []  # a closed bell leaves nothing behind


def test_a_store_whose_path_is_too_long_for_a_bell_is_still_watched(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    path = deep / "s.sqlite3"
    writer, reader = _store(path), _store(path)
    with reader.changes() as changes:
        assert not Doorbell(path).open  # no socket of that name: the tick alone
        writer.execute("INSERT INTO t VALUES (1)")
        assert changes.wait(30)
    writer.close()
    reader.close()
