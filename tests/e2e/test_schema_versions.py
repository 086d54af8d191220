"""Schema versions at start: ``serve`` and ``relay serve`` refuse a schema absent, older or newer than they know and name the command that fixes it; ``db upgrade`` run from several machines at once applies each migration once; ``relay serve`` reads its database from MURETAI_DB as ``db init --relay`` does."""

from __future__ import annotations

import secrets
from pathlib import Path

import psycopg
import pytest

from muretai_cli.inbox.store import door_namespace, door_schema
from tests.cli_helpers import new_identity, run, run_json
from tests.servers import (
    race,
    start_relay,
)
from tests.store_helpers import Role

pytestmark = pytest.mark.slow  # real processes started (and killed): seconds each


# -- schema versions at start ---------------------------------------------------------------
def test_serve_refuses_an_absent_or_older_schema_and_names_the_command_that_fixes_it(
        pg_url: str) -> None:
    did = new_identity("erin")
    serve = ("serve", "--as", "erin", "--url", "http://127.0.0.1:1", "--port", "0",
             "--db", pg_url)
    absent = run(*serve)
    assert absent.exit_code == 2 and "no-schema" in absent.stderr, absent.stderr
    assert f"muretai db init --db {pg_url} --as erin" in absent.stderr
    assert run_json("db", "init", "--as", "erin", "--db", pg_url)[0] == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'UPDATE "{door_namespace(did)}".muretai_schema SET version = %s',
                     (door_schema().latest - 1,))
    older = run(*serve)
    assert older.exit_code == 2 and "old-schema" in older.stderr, older.stderr
    assert f"muretai db upgrade --db {pg_url} --as erin" in older.stderr


def test_relay_serve_refuses_a_relay_schema_newer_than_it_knows(role: Role) -> None:
    """(The relay's schema has one version yet: no older one to refuse.)"""
    from muretai_cli.relay.store import SCHEMA

    assert run_json("db", "init", "--relay", "--db", role.admin)[0] == 0
    with psycopg.connect(role.admin, autocommit=True) as conn:
        conn.execute("UPDATE relay.muretai_schema SET version = %s", (SCHEMA.latest + 1,))
    refused = run("relay", "serve", "--url", "http://127.0.0.1:1", "--port", "0", "--db",
                  role.admin)
    assert refused.exit_code == 2 and "unknown-schema" in refused.stderr, refused.stderr
    assert "a muretai at least as new" in refused.stderr


def test_db_upgrade_run_from_several_machines_at_once_applies_each_migration_once(
        pg_url: str) -> None:
    """A rollout may run ``muretai db upgrade`` on every machine at once: each migration
    runs in one exclusive transaction, so all of them succeed and the schema is built once."""
    from muretai_cli.db import Database, open_database, upgrade, version_of

    namespace = f"door_{secrets.token_hex(4)}"
    databases: list[Database] = [open_database(pg_url, namespace=namespace) for _ in range(4)]
    try:
        results = race([lambda d=d: upgrade(d, door_schema()) for d in databases])
        latest = door_schema().latest
        # (a thread whose upgrade raised leaves None)
        assert results.count((0, latest)) == 1, results
        assert results.count((latest, latest)) == 3, results
        assert version_of(databases[0], door_schema()) == latest
    finally:
        for database in databases:
            database.close()


def test_relay_serve_takes_its_database_from_muretai_db(pg_url: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``relay serve`` reads ``MURETAI_DB`` as ``db init --relay`` does: the schema one made
    is the one the other serves (not a SQLite file beside it)."""
    monkeypatch.setenv("MURETAI_DB", pg_url)
    assert run_json("db", "init", "--relay")[0] == 0
    relay = start_relay(tmp_path).wait_ready()
    try:
        assert b"(schema relay)" in relay.log.read_bytes(), relay.log.read_text()
    finally:
        relay.stop()
