"""Group commit (a PostgreSQL relay): the deposits waiting in one process are stored in one
transaction with one commit, every rule holding inside a batch as between batches, and no
store call of a PostgreSQL relay runs on its event loop.

Deposits started in one turn of the event loop form one batch (``asyncio.gather`` of
``Relay.send``); each test that needs one checks the batch it got (``batches``).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import pytest

from muretai_cli.db import lock_key
from muretai_cli.relay.core import Relay
from muretai_cli.relay.limits import RelayConfig, RelayLimits
from muretai_cli.relay.pgnotify import PgNotifier
from muretai_cli.relay.store import Deposit, DepositOutcome, RelayStore
from muretai_cli.seam import SigningKey
from muretai_cli.urls import parse_base_url
from tests.relay_helpers import OnLoop, deposit_body, listen_body, live_relay
from tests.waiting import wait_until

URL = parse_base_url("https://relay.example")
NOW = 1_800_000_000


@pytest.fixture
def relay(pg_url: str) -> Iterator[OnLoop]:
    driven = _relay(pg_url)
    yield driven
    driven.close()


def _relay(pg_url: str, **limits: Any) -> OnLoop:
    """A PostgreSQL relay (its group commit signals other processes) on a loop of its own,
    that has made its first deposit (the once-a-minute expiry is behind it)."""
    driven = OnLoop(Relay(RelayConfig(URL, RelayLimits(**limits)), RelayStore.open(pg_url),
                          notifier=PgNotifier(pg_url)))
    assert driven.relay.calls.deposits is not None  # a PostgreSQL relay groups its deposits
    warm = deposit_body(SigningKey.generate(), SigningKey.generate(), "warm")
    assert driven(driven.relay.send(json.dumps(warm).encode()))[0] == 200
    return driven


def batches(relay: OnLoop) -> list[int]:
    """The sizes of the batches the relay's store is given from now on."""
    sizes: list[int] = []
    store = relay.relay.store
    real = store.deposit_many

    def spy(items: Sequence[Deposit], **kw: Any) -> list[DepositOutcome]:
        sizes.append(len(items))
        return real(items, **kw)

    store.deposit_many = spy  # type: ignore[method-assign]
    return sizes


def together(relay: OnLoop, bodies: list[dict[str, Any]]) -> list[str]:
    """Deposit bodies at once (one batch): each one's outcome."""
    async def main() -> list[Any]:
        return await asyncio.gather(*(relay.relay.send(json.dumps(b).encode())
                                      for b in bodies), return_exceptions=True)

    return [outcome(answer) for answer in relay(main())]


def outcome(answer: Any) -> str:
    if isinstance(answer, BaseException):
        return type(answer).__name__
    doc = json.loads(answer[1])
    if answer[0] != 200:
        return str(doc["error"])
    return "duplicate" if doc.get("duplicate") else "queued"


def stored(pg_url: str, to: SigningKey) -> list[tuple[str, str]]:
    with psycopg.connect(pg_url) as conn:
        return [(r[0], r[1]) for r in conn.execute(
            "SELECT id, from_did FROM relay.relay_messages WHERE to_did = %s ORDER BY seq",
            (to.did,))]


def test_twins_in_one_batch_store_one_and_the_rest_are_told_apart(
        relay: OnLoop, pg_url: str) -> None:
    alice, carol, bob = (SigningKey.generate() for _ in range(3))
    earlier = deposit_body(alice, bob, "earlier", deposit_id="d-earlier")
    assert together(relay, [earlier]) == ["queued"]
    sizes = batches(relay)
    exact = deposit_body(alice, bob, "one", deposit_id="d-1")
    answers = together(relay, [
        exact, exact,  # the same deposit twice: stored once, then a duplicate
        deposit_body(alice, bob, "two", deposit_id="d-2"),
        deposit_body(alice, bob, "other content", deposit_id="d-2"),  # the first one won
        deposit_body(carol, bob, "other sender", deposit_id="d-1"),
        earlier,  # stored by an earlier batch: a duplicate
        deposit_body(carol, bob, "new", deposit_id="d-earlier"),
    ])
    assert sizes == [7]
    assert answers == ["queued", "duplicate", "queued", "id-reused", "id-reused",
                       "duplicate", "id-reused"]
    assert stored(pg_url, bob) == [("d-earlier", alice.did), ("d-1", alice.did),
                                   ("d-2", alice.did)]


def test_the_mailbox_cap_counts_the_batch_s_own_deposits(pg_url: str) -> None:
    relay = _relay(pg_url, max_waiting=3)
    try:
        alice, bob, carol = (SigningKey.generate() for _ in range(3))
        assert together(relay, [deposit_body(alice, bob, "before")]) == ["queued"]
        sizes = batches(relay)
        answers = together(relay, [deposit_body(alice, bob, f"m{i}", deposit_id=f"d{i}")
                                   for i in range(4)] + [deposit_body(alice, carol, "x")])
        assert sizes == [5]
        assert answers == ["queued", "queued", "mailbox-full", "mailbox-full", "queued"]
        assert [i for i, _ in stored(pg_url, bob)][1:] == ["d0", "d1"]  # in their order
        # a full mailbox still tells a repeat from new content under a stored id
        assert together(relay, [deposit_body(alice, bob, "m0", deposit_id="d0")]) == [
            "id-reused"]  # another sealing of the same text: new content
    finally:
        relay.close()


def test_a_batch_whose_commit_fails_is_503_for_every_deposit_and_stores_nothing(
        relay: OnLoop, pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        # the next commit of a deposit dies in COMMIT itself (a deferred trigger ends the
        # server process serving it); later ones go through
        conn.execute("CREATE SEQUENCE relay.once")
        conn.execute('''CREATE FUNCTION relay.die_once() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN IF nextval('relay.once') = 1 THEN
            PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NULL; END $$''')
        conn.execute("CREATE CONSTRAINT TRIGGER die_once AFTER INSERT ON relay.relay_messages "
                     "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "
                     "relay.die_once()")
    try:
        alice, bob, carol = (SigningKey.generate() for _ in range(3))
        bodies = [deposit_body(alice, bob, "a"), deposit_body(alice, carol, "b"),
                  deposit_body(carol, bob, "c")]
        sizes = batches(relay)
        assert together(relay, bodies) == ["unavailable"] * 3
        assert sizes == [3]
        assert stored(pg_url, bob) == stored(pg_url, carol) == []
        # the database is back: the same deposits are taken, each once
        assert together(relay, bodies) == ["queued"] * 3
        assert len(stored(pg_url, bob)) == 2 and len(stored(pg_url, carol)) == 1
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER die_once ON relay.relay_messages")


def test_a_deposit_the_database_refuses_fails_alone_not_its_batch(
        relay: OnLoop, pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        # a value this database refuses (as it would one its types cannot hold)
        conn.execute('''CREATE FUNCTION relay.refuse() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN IF NEW.id = 'refused here' THEN RAISE EXCEPTION 'no'; END IF;
            RETURN NEW; END $$''')
        conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON relay.relay_messages "
                     "FOR EACH ROW EXECUTE FUNCTION relay.refuse()")
    try:
        alice, bob = SigningKey.generate(), SigningKey.generate()
        sizes = batches(relay)
        answers = together(relay, [deposit_body(alice, bob, "x", deposit_id="before"),
                                   deposit_body(alice, bob, "y", deposit_id="refused here"),
                                   deposit_body(alice, bob, "z", deposit_id="after")])
        assert sizes[0] == 3  # then each alone
        assert answers == ["queued", "RaiseException", "queued"]
        assert [i for i, _ in stored(pg_url, bob)] == ["before", "after"]
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER refuse ON relay.relay_messages")


def _race(pg_url: str, batch: list[list[Deposit]], max_waiting: int = 1000
          ) -> list[list[DepositOutcome]]:
    """Each store (a process of its own) deposits its batch, both at once."""
    stores = [RelayStore.open(pg_url) for _ in batch]
    gate = threading.Barrier(len(batch))
    results: list[Any] = [None] * len(batch)

    def run(i: int) -> None:
        gate.wait()
        try:
            results[i] = stores[i].deposit_many(batch[i], max_waiting=max_waiting)
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(batch))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for store in stores:
            store.close()
    assert all(isinstance(r, list) for r in results), results
    return results


GATE = 424242  # an advisory lock a test holds to keep a batch in its COMMIT


def _named(pg_url: str, name: str) -> RelayStore:
    """A store (a process of its own) whose connections are named ``name`` on the server."""
    return RelayStore.open(f"{pg_url}{'&' if '?' in pg_url else '?'}application_name={name}")


def _waits(conn: psycopg.Connection[Any], name: str) -> bool:
    """Whether a connection named ``name`` waits for a lock."""
    return conn.execute(
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE NOT l.granted AND a.application_name = %s", (name,)).fetchone() != (0,)



def test_duplicates_racing_in_two_processes_store_one(pg_url: str) -> None:
    """Process A's batch is held in its COMMIT (its rows written, not committed) while
    process B's batch carries the same deposits: B waits for A's mailboxes, then finds
    A's rows and answers each a duplicate. Each deposit is stored once."""
    alice = SigningKey.generate()
    boxes = [SigningKey.generate().did for _ in range(5)]
    items = [Deposit(to, alice.did, alice.enc_pub, f"d-{n}", "QUJD" * 8, NOW)
             for n, to in enumerate(boxes)]
    with psycopg.connect(pg_url, autocommit=True) as gate:
        gate.execute(f"""CREATE FUNCTION relay.gate() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN PERFORM pg_advisory_xact_lock_shared({GATE}); RETURN NULL; END $$""")
        gate.execute("CREATE CONSTRAINT TRIGGER gate AFTER INSERT ON relay.relay_messages "
                     "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION relay.gate()")
        stores = [_named(pg_url, "relay-a"), _named(pg_url, "relay-b")]
        results: list[Any] = [None, None]

        def run(i: int, batch: list[Deposit]) -> None:
            try:
                results[i] = stores[i].deposit_many(batch, max_waiting=1000)
            except BaseException as exc:
                results[i] = exc

        try:
            with gate.transaction():
                gate.execute("SELECT pg_advisory_xact_lock(%s)", (GATE,))
                a = threading.Thread(target=run, args=(0, items))
                a.start()
                wait_until(lambda: _waits(gate, "relay-a"), "relay-a waits for a lock", timeout=10, interval=0.01)  # in its COMMIT, rows written
                b = threading.Thread(target=run, args=(1, items[::-1]))
                b.start()
                # B waits too: for A's mailboxes (or, were they not locked, for its rows)
                wait_until(lambda: _waits(gate, "relay-b"), "relay-b waits for a lock", timeout=10, interval=0.01)
            a.join()
            b.join()
        finally:
            for store in stores:
                store.close()
            gate.execute("DROP TRIGGER gate ON relay.relay_messages")
        assert results == [["queued"] * 5, ["duplicate"] * 5]
        assert gate.execute("SELECT count(*) FROM relay.relay_messages WHERE to_did = "
                            "ANY(%s)", (boxes,)).fetchone() == (5,)


def test_a_batch_locks_its_mailboxes_in_one_order(pg_url: str) -> None:
    """Two processes' batches over the same mailboxes never wait for each other in a
    circle (PostgreSQL would abort one as a deadlock: a 503 for a whole batch): each takes
    its mailboxes' locks in key order, whatever the order of its deposits. While one
    mailbox is held elsewhere, the batch holds exactly the mailboxes before it."""
    alice = SigningKey.generate()
    boxes = [SigningKey.generate().did for _ in range(9)]
    keys = {to: lock_key(f"relay mailbox {to}") for to in boxes}
    middle = sorted(boxes, key=keys.__getitem__)[4]
    items = [Deposit(to, alice.did, alice.enc_pub, "d", "QUJD" * 8, NOW) for to in boxes]
    store = _named(pg_url, "relay-order")
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (keys[middle],))
                batch = threading.Thread(target=store.deposit_many, args=(items,),
                                         kwargs={"max_waiting": 10})
                batch.start()
                wait_until(lambda: _waits(conn, "relay-order"), "relay-order waits for a lock", timeout=10, interval=0.01)
                held = {(r[0] << 32 | r[1]) - (1 << 64) * (r[0] >= 1 << 31)
                        for r in conn.execute(
                            "SELECT l.classid::bigint, l.objid::bigint FROM pg_locks l JOIN "
                            "pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = "
                            "'advisory' AND l.granted AND a.application_name = %s",
                            ("relay-order",))}
            batch.join()
        assert held == {k for k in keys.values() if k < keys[middle]}
    finally:
        store.close()


def test_the_mailbox_cap_holds_exactly_across_processes(pg_url: str) -> None:
    alice, bob = SigningKey.generate(), SigningKey.generate()
    items = [[Deposit(bob.did, alice.did, alice.enc_pub, f"{p}-{n}", "QUJD" * 8, NOW)
              for n in range(8)] for p in ("a", "b")]
    results = _race(pg_url, items, max_waiting=10)
    assert sum(o == "queued" for r in results for o in r) == 10
    assert sum(o == "mailbox-full" for r in results for o in r) == 6
    assert len(stored(pg_url, bob)) == 10


async def _lock_waited(pg_url: str) -> None:
    """Return once a session of this database waits for a lock (the event loop goes on
    meanwhile), instead of sleeping and hoping the waiter got that far."""
    with psycopg.connect(pg_url, autocommit=True) as watch:
        for _ in range(1000):
            if watch.execute(
                    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE NOT l.granted AND a.datname = current_database()"
                    ).fetchone() != (0,):
                return
            await asyncio.sleep(0.01)
    raise AssertionError("no session of the database came to wait for the lock")


def test_a_deposit_waiting_for_the_database_leaves_the_loop_free(pg_url: str) -> None:
    """Nothing a PostgreSQL relay asks its store runs on its event loop: while a deposit
    waits for its mailbox (another process holds it), listens and cards are answered;
    while a listen's epoch claim waits, deposits are."""
    alice, bob, carol = (SigningKey.generate() for _ in range(3))
    # were a store call made on the loop, it would wait there for the lock (the test's
    # own connection could never give it back): a lock timeout turns that into a failure
    relay = _relay(f"{pg_url}{'&' if '?' in pg_url else '?'}options=-c%20lock_timeout%3D10s")

    async def scenario(conn: psycopg.Connection[Any]) -> None:
        r = relay.relay
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)",
                         (lock_key(f"relay mailbox {bob.did}"),))
            held = asyncio.ensure_future(r.send(json.dumps(deposit_body(alice, bob)).encode()))
            await _lock_waited(pg_url)  # the deposit has reached the mailbox lock
            assert not held.done()
            listened = await r.listen(json.dumps(listen_body(carol, URL.origin, wait=0))
                                      .encode())
            assert listened is not None and json.loads(listened[1])["messages"] == []
            assert (await r.get_card(carol.did))[0] == 404
            assert not held.done()
        assert outcome(await asyncio.wait_for(held, 10)) == "queued"
        with conn.transaction():  # a listener row locked: bob's epoch claim waits
            conn.execute("SELECT 1 FROM relay.relay_listeners WHERE did = %s FOR UPDATE",
                         (carol.did,))
            claim = asyncio.ensure_future(r.listen(json.dumps(
                listen_body(carol, URL.origin, epoch=2, wait=0)).encode()))
            await _lock_waited(pg_url)  # the claim has reached the listener row's lock
            assert not claim.done()
            assert outcome(await r.send(json.dumps(deposit_body(carol, alice)).encode())
                           ) == "queued"
            assert not claim.done()
        answer = await asyncio.wait_for(claim, 10)
        assert answer is not None and answer[0] == 200

    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            relay(scenario(conn))
    finally:
        relay.close()


def test_a_held_poll_answers_409_when_a_newer_listener_claims_through_another_process(
        pg_url: str) -> None:
    a, b = _relay(pg_url), _relay(pg_url)
    try:
        bob = SigningKey.generate()

        async def scenario() -> tuple[int, float]:
            notifier = b.relay.notifier
            assert isinstance(notifier, PgNotifier)
            await notifier.start()
            await asyncio.wait_for(notifier.ready.wait(), 10)
            body = json.dumps(listen_body(bob, URL.origin, epoch=1, wait=20)).encode()
            poll = asyncio.ensure_future(b.relay.listen(body))
            while notifier._local.listeners() == 0:
                await asyncio.sleep(0.01)
            started = asyncio.get_running_loop().time()
            newer = json.dumps(listen_body(bob, URL.origin, epoch=2, wait=0)).encode()
            await asyncio.to_thread(a, a.relay.listen(newer))
            answer = await asyncio.wait_for(poll, 10)
            await notifier.aclose()
            assert answer is not None
            return answer[0], asyncio.get_running_loop().time() - started

        status, took = b(scenario())
        assert status == 409 and took < 5
    finally:
        a.close()
        b.close()


def test_a_lost_database_is_503_for_deposits_and_listens_then_the_relay_reconnects(
        pg_url: str) -> None:
    alice, bob = SigningKey.generate(), SigningKey.generate()

    def lose() -> None:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE datname = current_database() AND pid <> pg_backend_pid()")

    with live_relay(pg_url) as live:
        assert live.deposit(alice, bob).status_code == 200
        lose()
        lost = live.deposit(alice, bob)
        assert lost.status_code == 503 and lost.json()["error"] == "unavailable"
        assert live.deposit(alice, bob).status_code == 200
        lose()
        assert live.listen(bob).status_code == 503
        again = live.listen(bob)
        assert again.status_code == 200 and len(again.json()["messages"]) == 2
