"""``muretai db`` and ``--db``: explicit schemas, the owner's commands on PostgreSQL, and a
database that goes away (HTTP 503, never a signed reply; the next request reconnects)."""

from __future__ import annotations

import psycopg
import pytest

from muretai_cli.inbox.store import door_namespace, door_schema
from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run, run_json
from tests.door_helpers import code_of, live_door, send_request


def test_db_init_status_upgrade_and_the_owner_commands_on_postgres(pg_url: str) -> None:
    new_identity("alice")
    code, doc = run_json("op", "--as", "alice", "--db", pg_url, "inbox")
    assert code == 2 and doc["error"] == "no-schema"
    assert "muretai db init --db" in doc["hint"] and "--as alice" in doc["hint"]
    code, doc = run_json("db", "status", "--as", "alice", "--db", pg_url)
    assert code == 1 and doc["schemaVersion"] == 0
    code, doc = run_json("db", "init", "--as", "alice", "--db", pg_url)
    assert code == 0 and doc["schemaVersion"] == doc["expected"] and doc["previousVersion"] == 0
    assert doc["backend"] == "postgresql"
    code, doc = run_json("db", "upgrade", "--as", "alice", "--db", pg_url)
    assert code == 0 and doc["previousVersion"] == doc["schemaVersion"]
    assert run_json("op", "--as", "alice", "--db", pg_url, "inbox") == (
        0, {"ok": True, "messages": []})
    issued = run("contact", "issue", "--as", "alice", "--uses", "2", "--db", pg_url)
    assert issued.exit_code == 0, issued.stderr
    code, doc = run_json("contact", "grants", "--as", "alice", "--db", pg_url)
    assert code == 0 and [g["usesLeft"] for g in doc["grants"]] == [2]
    code, doc = run_json("contact", "grants", "--as", "alice")  # the SQLite file: its own
    assert code == 0 and doc["grants"] == []


def test_muretai_db_env_names_the_database(pg_url: str, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    new_identity("bob")
    monkeypatch.setenv("MURETAI_DB", pg_url)
    assert run_json("db", "init", "--as", "bob")[0] == 0
    code, doc = run_json("db", "status", "--as", "bob")
    assert code == 0 and "schema door_" in doc["database"]


def test_a_newer_schema_is_refused_with_what_to_do(pg_url: str) -> None:
    did = new_identity("carol")
    assert run_json("db", "init", "--as", "carol", "--db", pg_url)[0] == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'UPDATE "{door_namespace(did)}".muretai_schema SET version = 99')
    code, doc = run_json("op", "--as", "carol", "--db", pg_url, "requests", "list")
    assert code == 2 and doc["error"] == "unknown-schema"
    result = run("serve", "--as", "carol", "--url", "http://127.0.0.1:1", "--port", "0",
                 "--db", pg_url)
    assert result.exit_code == 2 and "unknown-schema" in result.stderr


def test_invite_tables_are_the_door_schema_s_and_never_created_by_a_command(pg_url: str
                                                                             ) -> None:
    did = new_identity("dave")
    schema = door_namespace(did)
    assert run_json("db", "init", "--as", "dave", "--db", pg_url)[0] == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        found = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema=%s",
            (schema,))}
        assert {"invites", "invite_claims", "contacts"} <= found
        # a database left by the release before invites: version 4, no invite tables
        for table in ("invites", "invite_claims", "contacts"):
            conn.execute(f'DROP TABLE "{schema}".{table}')
        for table in ("inbox", "requests"):  # and without what version 6 adds
            conn.execute(f'ALTER TABLE "{schema}".{table} DROP COLUMN wba')
        conn.execute(f'DROP INDEX "{schema}".relayed_shown')  # nor what version 7 adds
        conn.execute(f'ALTER TABLE "{schema}".relayed DROP COLUMN claimant')
        conn.execute(f'DROP TABLE "{schema}".keystate_pins')  # nor what version 8 adds
        conn.execute(f'UPDATE "{schema}".muretai_schema SET version = 4 WHERE store = %s',
                     ("door",))
    code, doc = run_json("invite", "list", "--as", "dave", "--db", pg_url)
    assert code == 2 and doc["error"] == "old-schema", doc
    assert "muretai db upgrade" in doc["hint"]
    code, doc = run_json("db", "upgrade", "--as", "dave", "--db", pg_url)
    assert code == 0 and (doc["previousVersion"], doc["schemaVersion"]) == (
        4, door_schema().latest)
    assert run_json("invite", "list", "--as", "dave", "--db", pg_url) == (
        0, {"ok": True, "as": "dave", "invites": []})


def test_a_lost_database_is_503_then_the_door_reconnects(pg_url: str) -> None:
    with live_door("open", db=pg_url) as door:
        alice = SigningKey.generate()
        assert door.rpc(send_request(alice, door.did, "one"))["_status"] == 200
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        lost = door.rpc(send_request(alice, door.did, "two", mid="m-two"))
        assert lost["_status"] == 503 and "result" not in lost
        assert lost["error"]["data"]["reason"] == "database-unavailable"
        again = door.rpc(send_request(alice, door.did, "two", mid="m-two"))
        assert again["_status"] == 200 and code_of(again) is None, again
        owner = door.store()
        try:
            assert [m["text"] for m in owner.inbox()] == ["two", "one"]
        finally:
            owner.close()
