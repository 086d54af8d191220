"""Issue 11's sentences that no other test held on real parts (an audit of the scale-out).

- A database that goes away for a while (every new connection refused, not only the open
  ones cut): the door and the relay answer 503, never "accepted"/"queued", and serve again
  once it is back; what was committed before is still there, and a relay's long-poll on
  another process wakes after its LISTEN connection came back.
- What PostgreSQL says when it runs out of something (class 53: a full disk, too many
  connections) is an unavailability: HTTP 503, never a -32603 or a signed reply.
- ``serve --workers 2`` on SQLite shares replay, grant uses and rate limits through the file.
- ``relay serve --workers 2`` on PostgreSQL: a poll held by one worker wakes on a deposit
  taken by the other.
- kill -9 of one of two ``serve`` processes while requests are in flight on it: every
  message answered as accepted is in the inbox once, and every message is accepted once.
- A total rate limit is counted across two ``serve`` processes.
- ``serve`` on a schema it does not know (absent, older) refuses to start and names the fix.

A database "goes away" for one role here: a role of its own with its connection limit set
to 0 and its sessions ended, so the rest of the test server is untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest

from muretai_cli.inbox.store import door_namespace, door_schema, open_identity_store
from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run, run_json
from tests.door_helpers import code_of, live_door, send_request
from tests.relay_helpers import deposit_body, listen_body
from tests.servers import start_many, start_relay, start_serve, wait_until
from tests.test_door_policy import redeem_params
from tests.test_scale_out import _children, race, stop_all

RELAY_ORIGIN = "http://127.0.0.1:1"  # what start_relay's --url makes the tokens name


# -- a database of the test's own, reached through a role that can be shut out -----------
@dataclass
class Role:
    admin: str  # the test server's superuser URL to this database
    url: str  # the same database as the role (what the servers are given)
    name: str

    def away(self) -> None:
        """Every session of the role ended, and no new one let in (SQLSTATE 53300)."""
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {self.name} CONNECTION LIMIT 0")
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE usename = %s", (self.name,))

    def back(self) -> None:
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {self.name} CONNECTION LIMIT -1")


def _with_path(url: str, *, path: str | None = None, user: str | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if user is not None:
        netloc = f"{user}@{netloc.rsplit('@', 1)[-1]}"
    return urlunsplit(parts._replace(netloc=netloc, path=path or parts.path))


@pytest.fixture
def role(pg_server: str) -> Iterator[Role]:
    """A fresh database and a plain (non-superuser) role that may create schemas in it."""
    name = f"a_{secrets.token_hex(5)}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(f"GRANT CREATE ON DATABASE {name} TO {name}")
    admin = _with_path(pg_server, path=f"/{name}")
    yield Role(admin, _with_path(admin, user=name), name)
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"DROP ROLE IF EXISTS {name}")


def _reason(doc: dict[str, Any]) -> str | None:
    return ((doc.get("error") or {}).get("data") or {}).get("reason")


def _fresh(doc: dict[str, Any]) -> bool:
    return "result" in doc and not doc["result"]["metadata"].get("recovered")


def test_a_door_answers_503_while_its_database_is_away_and_serves_again_when_back(
        role: Role) -> None:
    with live_door("open", db=role.url) as door:
        alice = SigningKey.generate()
        assert _fresh(door.rpc(send_request(alice, door.did, "one")))
        role.away()
        try:
            # the first meets a pooled connection that was cut; the second finds the pool
            # unable to open a new one (too many connections for the role)
            for _ in range(2):
                resp = door.post(send_request(alice, door.did, "two", mid="m-two"))
                lost = resp.json()
                assert resp.status_code == 503 and "result" not in lost, lost
                assert _reason(lost) == "database-unavailable"
                assert resp.headers["retry-after"] == "1"
            # the card already signed is still served
            assert door.get(door.address + "/.well-known/agent-card.json").status_code == 200
        finally:
            role.back()
        # the first request after the database is back is served (the pool reconnects)
        again = door.rpc(send_request(alice, door.did, "two", mid="m-two"))
        assert again["_status"] == 200 and _fresh(again), again
        owner = door.store()
        try:
            assert [m["text"] for m in owner.inbox()] == ["two", "one"]
        finally:
            owner.close()


def _raise_in(admin: str, schema: str, table: str, sqlstate: str) -> None:
    """Every insert into ``schema.table`` fails with ``sqlstate`` (as PostgreSQL would)."""
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'''CREATE FUNCTION "{schema}".refuse() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'
            USING ERRCODE = '{sqlstate}'; END $$''')
        conn.execute(f'CREATE TRIGGER refuse BEFORE INSERT ON "{schema}".{table} '
                     f'FOR EACH ROW EXECUTE FUNCTION "{schema}".refuse()')


def _lift(admin: str, schema: str, table: str) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP TRIGGER refuse ON "{schema}".{table}')


@pytest.mark.parametrize(("sqlstate", "policy", "table"), [
    ("53100", "open", "inbox"),  # disk_full, in a group commit
    ("53300", "open", "inbox"),  # too_many_connections
    ("53200", "open", "inbox"),  # out_of_memory
    ("53100", "quarantine", "requests"),  # disk_full, in a hold (an exclusive transaction)
])
def test_a_database_out_of_resources_is_503_never_accepted_nor_an_internal_error(
        pg_url: str, sqlstate: str, policy: str, table: str) -> None:
    with live_door(policy, db=pg_url) as door:
        schema = door_namespace(door.did)
        _raise_in(pg_url, schema, table, sqlstate)
        stranger = SigningKey.generate()
        body = send_request(stranger, door.did, "full", mid="m-full")
        refused = door.rpc(body)
        assert refused["_status"] == 503 and "result" not in refused, refused
        assert _reason(refused) == "database-unavailable"
        _lift(pg_url, schema, table)
        answer = door.rpc(body)  # nothing of it was committed: taken now, once
        if policy == "open":
            assert _fresh(answer), answer
        else:
            assert code_of(answer) == -32014, answer  # held for the owner's decision
        owner = door.store()
        try:
            kept = owner.inbox() if policy == "open" else owner.requests()
            assert [m["text"] for m in kept] == ["full"]
        finally:
            owner.close()


def test_a_relay_deposit_on_a_full_database_is_503_never_queued(role: Role,
                                                                  tmp_path: Path) -> None:
    assert run_json("db", "init", "--relay", "--db", role.url)[0] == 0
    relay = start_relay(tmp_path, "--db", role.url).wait_ready()
    try:
        alice, bob = SigningKey.generate(), SigningKey.generate()
        body = deposit_body(alice, bob, "full")
        _raise_in(role.admin, "relay", "relay_messages", "53100")
        refused = httpx.post(relay.base + "/send", json=body, timeout=10)
        assert refused.status_code == 503 and refused.json().get("queued") is None, refused.text
        assert refused.headers["retry-after"] == "1"
        _lift(role.admin, "relay", "relay_messages")
        assert httpx.post(relay.base + "/send", json=body, timeout=10).json()["queued"] is True
        got = httpx.post(relay.base + "/listen", json=listen_body(bob, RELAY_ORIGIN, wait=0),
                         timeout=10).json()
        assert [m["id"] for m in got["messages"]] == [body["id"]]
        assert b"Traceback" not in relay.log.read_bytes()
    finally:
        relay.stop()


def test_relays_answer_503_while_their_database_is_away_then_serve_and_wake_again(
        role: Role, tmp_path: Path) -> None:
    """Two ``relay serve`` processes on one database that goes away and comes back: 503
    (never queued) meanwhile, nothing committed lost, and a poll held by one wakes on a
    deposit through the other once its LISTEN connection is back."""
    assert run_json("db", "init", "--relay", "--db", role.url)[0] == 0
    procs = [start_relay(tmp_path, "--db", role.url, tag=str(i)) for i in range(2)]
    try:
        a, b = (p.wait_ready() for p in procs)
        alice, bob = SigningKey.generate(), SigningKey.generate()
        before = deposit_body(alice, bob, "before")
        assert httpx.post(a.base + "/send", json=before, timeout=10).json()["queued"] is True
        during = deposit_body(alice, bob, "during")
        role.away()
        try:
            sent = httpx.post(a.base + "/send", json=during, timeout=10)
            assert sent.status_code == 503 and "queued" not in sent.json(), sent.text
            polled = httpx.post(b.base + "/listen",
                                json=listen_body(bob, RELAY_ORIGIN, wait=0), timeout=10)
            assert polled.status_code == 503, polled.text
        finally:
            role.back()
        wait_until(lambda: httpx.post(a.base + "/send", json=during,
                                      timeout=10).status_code == 200, "a deposits again")
        got = httpx.post(b.base + "/listen", json=listen_body(bob, RELAY_ORIGIN, wait=0),
                         timeout=10).json()
        assert sorted(m["id"] for m in got["messages"]) == sorted([before["id"],
                                                                   during["id"]])
        ack = listen_body(bob, RELAY_ORIGIN) | {"ids": [before["id"], during["id"]]}
        assert httpx.post(b.base + "/ack", json=ack, timeout=10).json() == {"acked": 2}
        # b's LISTEN connection was cut too: a poll held on b wakes on a deposit through a
        held: list[httpx.Response] = []
        poll = threading.Thread(target=lambda: held.append(httpx.post(
            b.base + "/listen", json=listen_body(bob, RELAY_ORIGIN, wait=20), timeout=40)))
        poll.start()
        time.sleep(0.3)  # (the poll may be held or not yet: either way it must answer)
        after = deposit_body(alice, bob, "after")
        started = time.monotonic()
        assert httpx.post(a.base + "/send", json=after, timeout=10).json()["queued"] is True
        poll.join(timeout=25)
        assert held and held[0].status_code == 200, held
        assert [m["id"] for m in held[0].json()["messages"]] == [after["id"]]
        assert time.monotonic() - started < 8  # woken, long before the 20 s wait
    finally:
        for p in procs:
            p.stop()


# -- workers ------------------------------------------------------------------------------
def _accepted_by(client: socket.socket, pids: set[int], timeout: float = 10.0) -> int:
    """Which of ``pids`` accepted the connection ``client`` (its server side's socket)."""
    client_port = client.getsockname()[1]
    server_port = client.getpeername()[1]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        inode = 0
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            local = int(fields[1].rsplit(":", 1)[1], 16)
            remote = int(fields[2].rsplit(":", 1)[1], 16)
            if (local, remote) == (server_port, client_port) and int(fields[9]):
                inode = int(fields[9])
        if inode:
            for pid in pids:
                with contextlib.suppress(OSError):
                    for fd in Path(f"/proc/{pid}/fd").iterdir():
                        with contextlib.suppress(OSError):
                            if os.readlink(fd) == f"socket:[{inode}]":
                                return pid
        time.sleep(0.01)
    raise AssertionError("no worker accepted the connection")


def _post_raw(client: socket.socket, path: str, body: dict[str, Any]) -> None:
    raw = json.dumps(body).encode()
    client.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(raw)}\r\n\r\n".encode() + raw)


def _read_answer(client: socket.socket) -> tuple[int, Any]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = client.recv(65536)
        assert chunk, buf
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        chunk = client.recv(65536)
        assert chunk
        body += chunk
    return int(head.split(b" ", 2)[1]), json.loads(body)


def _connect_to(port: int, want: int, pids: set[int]) -> socket.socket:
    """A connection that worker ``want`` accepted (new ones until the kernel gives one)."""
    for _ in range(64):
        client = socket.create_connection(("127.0.0.1", port), timeout=25)
        if _accepted_by(client, pids) == want:
            return client
        client.close()
    raise AssertionError(f"worker {want} was given no connection in 64 tries")


def test_relay_workers_on_postgresql_wake_each_other_and_share_deposits_and_acks(pg_url: str, tmp_path: Path) -> None:
    assert run_json("db", "init", "--relay", "--db", pg_url)[0] == 0
    proc = start_relay(tmp_path, "--db", pg_url, "--workers", "2").wait_ready()
    try:
        port = int(proc.base.rsplit(":", 1)[1])
        wait_until(lambda: len(_children(proc.proc.pid)) == 2, "two workers run")
        workers = _children(proc.proc.pid)
        alice, bob = SigningKey.generate(), SigningKey.generate()
        one, other = sorted(workers)
        with _connect_to(port, one, workers) as poller:
            _post_raw(poller, "/listen", listen_body(bob, RELAY_ORIGIN, wait=20))
            time.sleep(0.3)  # (held or not yet: either way it must answer the deposit)
            with _connect_to(port, other, workers) as sender:
                body = deposit_body(alice, bob, "across")
                started = time.monotonic()
                _post_raw(sender, "/send", body)
                assert _read_answer(sender) == (200, {"queued": True, "id": body["id"]})
            status, doc = _read_answer(poller)
            assert status == 200 and [m["id"] for m in doc["messages"]] == [body["id"]]
            assert time.monotonic() - started < 5  # woken, long before the 20 s wait
        # one deposit sent to both workers at once is stored once; an ack through one
        # worker is seen by a listen through the other
        carol = SigningKey.generate()
        dups = [deposit_body(alice, carol, f"dup {i}") for i in range(5)]
        with _connect_to(port, one, workers) as x, _connect_to(port, other, workers) as y:
            for body in dups:
                race([lambda s=s, b=body: _post_raw(s, "/send", b) for s in (x, y)])
                assert [_read_answer(s)[0] for s in (x, y)] == [200, 200]
            _post_raw(x, "/listen", listen_body(carol, RELAY_ORIGIN, wait=0))
            status, doc = _read_answer(x)
            ids = [m["id"] for m in doc["messages"]]
            assert status == 200 and sorted(ids) == sorted(b["id"] for b in dups), doc
            _post_raw(y, "/ack", listen_body(carol, RELAY_ORIGIN) | {"ids": ids})
            assert _read_answer(y) == (200, {"acked": 5})
            _post_raw(x, "/listen", listen_body(carol, RELAY_ORIGIN, wait=0))
            assert _read_answer(x)[1]["messages"] == []
    finally:
        proc.stop()


def test_sqlite_workers_share_replay_grant_uses_and_rate_limits_through_the_file(
        tmp_path: Path) -> None:
    did = new_identity("door")
    issued = run_json("contact", "issue", "--as", "door", "--uses", "2")
    assert issued[0] == 0
    grant = issued[1]["grant"]
    proc = start_serve(tmp_path, "door", "--dm-policy", "open", "--workers", "2",
                       "--rate-per-sender", "4", "--rate-total", "0").wait_ready()
    try:
        wait_until(lambda: len(_children(proc.proc.pid)) == 2, "two workers run")

        def post(body: dict[str, Any]) -> dict[str, Any]:
            return proc.rpc(body)  # a new connection each: the kernel spreads them

        once = send_request(SigningKey.generate(), did, "once")
        answers = race([lambda: post(once)] * 6)
        assert sum(_fresh(a) for a in answers) == 1, answers
        assert all(_fresh(a) or code_of(a) == -32002 or a["result"]["metadata"]["recovered"]
                   for a in answers), answers
        senders = [SigningKey.generate() for _ in range(6)]
        bodies = [{"jsonrpc": "2.0", "id": i, "method": "contact/redeem",
                   "params": redeem_params(s, grant, now=int(time.time()))}
                  for i, s in enumerate(senders)]
        redeemed = race([lambda b=b: post(b) for b in bodies])
        assert sum("result" in a for a in redeemed) == 2, redeemed
        # 12 requests over new connections: counted per worker, at least 5 would pass
        # unless the kernel gave all 12 to one worker (1 in 2048)
        burst = SigningKey.generate()
        statuses = [post(send_request(burst, did, f"b{i}"))["_status"] for i in range(12)]
        assert statuses == [200] * 4 + [429] * 8
    finally:
        proc.stop()


def test_sqlite_workers_hold_one_request_per_stranger_and_an_approval_applies_to_all(
        tmp_path: Path) -> None:
    did = new_identity("door")
    proc = start_serve(tmp_path, "door", "--dm-policy", "quarantine", "--workers", "2"
                       ).wait_ready()
    try:
        wait_until(lambda: len(_children(proc.proc.pid)) == 2, "two workers run")
        stranger = SigningKey.generate()
        firsts = [send_request(stranger, did, f"hello {i}") for i in range(6)]
        answers = race([lambda b=b: proc.rpc(b) for b in firsts])
        assert [code_of(a) for a in answers] == [-32014] * 6, answers
        ids = {a["error"]["data"]["requestId"] for a in answers}
        assert len(ids) == 1, ids
        assert run("op", "--as", "door", "requests", "approve", ids.pop()).exit_code == 0
        for i in range(4):  # new connections: both workers see the approval
            assert _fresh(proc.rpc(send_request(stranger, did, f"approved {i}")))
    finally:
        proc.stop()


# -- several serve processes on one PostgreSQL database ------------------------------------
def test_a_total_rate_limit_is_counted_across_processes(pg_door: tuple[str, str], pg_url: str,
                                                         tmp_path: Path) -> None:
    name, did = pg_door
    procs = start_many(tmp_path, name, 2, "--dm-policy", "open", "--db", pg_url,
                       "--rate-per-sender", "0", "--rate-total", "5")
    try:
        answers = [procs[i % 2].rpc(send_request(SigningKey.generate(), did, f"t{i}"))
                   for i in range(10)]
        assert [a["_status"] for a in answers] == [200] * 5 + [429] * 5
    finally:
        stop_all(procs)


def test_kill_9_with_requests_in_flight_loses_nothing_accepted_and_takes_each_once(
        pg_door: tuple[str, str], pg_url: str, tmp_path: Path) -> None:
    """Four clients at once over two processes; one is killed while they are mid-request.
    A request that failed (connection lost, or 503) is sent again to the survivor, as a
    client would: if the dead process had committed it, the survivor gives its kept reply."""
    name, did = pg_door
    procs = start_many(tmp_path, name, 2, "--dm-policy", "open", "--db", pg_url,
                       "--rate-per-sender", "0", "--rate-total", "0")
    senders = [SigningKey.generate() for _ in range(4)]
    accepted: list[str] = []
    failed_over: list[str] = []
    lock = threading.Lock()

    def load(sender: SigningKey, c: int) -> None:
        with httpx.Client() as client:
            for i in range(40):
                body = send_request(sender, did, f"c{c} m{i}", mid=f"c{c}-{i}")
                for target in (procs[i % 2], procs[1]):
                    try:
                        doc = target.rpc(body, client)
                    except httpx.TransportError:
                        with lock:
                            failed_over.append(body["params"]["message"]["messageId"])
                        continue
                    if "result" in doc:
                        with lock:
                            accepted.append(body["params"]["message"]["messageId"])
                        break

    threads = [threading.Thread(target=load, args=(s, c)) for c, s in enumerate(senders)]
    try:
        for t in threads:
            t.start()
        wait_until(lambda: len(accepted) >= 40 or not any(t.is_alive() for t in threads),
                   "40 messages accepted")
        os.kill(procs[0].proc.pid, signal.SIGKILL)
        for t in threads:
            t.join(timeout=60)
        assert procs[0].proc.wait(timeout=10) == -signal.SIGKILL
        store = open_identity_store(did, pg_url)
        try:
            ids = [m["messageId"] for m in store.inbox(None)]
        finally:
            store.close()
        assert len(ids) == len(set(ids)), "a message was delivered twice"
        assert len(accepted) == len(set(accepted)) == 160, "a message was never accepted"
        assert set(ids) == set(accepted), "an accepted message was lost"
        assert failed_over, "no request failed over to the survivor"
    finally:
        stop_all(procs)


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
