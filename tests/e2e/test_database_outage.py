"""A database that goes away, or runs out of something, is an unavailability.

- A database that goes away for a while (every new connection refused, not only the open
  ones cut): the door and the relay answer 503, never "accepted"/"queued", and serve again
  once it is back; what was committed before is still there, and a relay's long-poll on
  another process wakes after its LISTEN connection came back.
- What PostgreSQL says when it runs out of something (class 53: a full disk, too many
  connections) is an unavailability: HTTP 503, never a -32603 or a signed reply.

A database "goes away" for one role here: a role of its own with its connection limit set
to 0 and its sessions ended, so the rest of the test server is untouched.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from muretai_cli.inbox.store import door_namespace
from muretai_cli.seam import SigningKey
from tests.cli_helpers import run_json
from tests.door_helpers import code_of, is_fresh, live_door, reason_of, send_request
from tests.relay_helpers import deposit_body, listen_body, listener_epoch
from tests.servers import (
    RELAY_ORIGIN,
    start_relay,
    wait_until,
)
from tests.store_helpers import Role

pytestmark = pytest.mark.slow  # real processes started (and killed): seconds each


def test_a_door_answers_503_while_its_database_is_away_and_serves_again_when_back(
        role: Role) -> None:
    with live_door("open", db=role.url) as door:
        alice = SigningKey.generate()
        assert is_fresh(door.rpc(send_request(alice, door.did, "one")))
        role.away()
        try:
            # the first meets a pooled connection that was cut; the second finds the pool
            # unable to open a new one (too many connections for the role)
            for _ in range(2):
                resp = door.post(send_request(alice, door.did, "two", mid="m-two"))
                lost = resp.json()
                assert resp.status_code == 503 and "result" not in lost, lost
                assert reason_of(lost) == "database-unavailable"
                assert resp.headers["retry-after"] == "1"
            # the card already signed is still served
            assert door.get(door.address + "/.well-known/agent-card.json").status_code == 200
        finally:
            role.back()
        # the first request after the database is back is served (the pool reconnects)
        again = door.rpc(send_request(alice, door.did, "two", mid="m-two"))
        assert again["_status"] == 200 and is_fresh(again), again
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
        assert reason_of(refused) == "database-unavailable"
        _lift(pg_url, schema, table)
        answer = door.rpc(body)  # nothing of it was committed: taken now, once
        if policy == "open":
            assert is_fresh(answer), answer
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
        # (a new epoch: the poll has been taken by b once its claim is in the database)
        held: list[httpx.Response] = []
        poll = threading.Thread(target=lambda: held.append(httpx.post(
            b.base + "/listen", json=listen_body(bob, RELAY_ORIGIN, wait=20, epoch=2),
            timeout=40)))
        poll.start()
        wait_until(lambda: listener_epoch(role.admin, bob.did) == 2 or not poll.is_alive(),
                   "b has taken the poll")
        assert poll.is_alive() and not held, "the poll was answered before any deposit"
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


