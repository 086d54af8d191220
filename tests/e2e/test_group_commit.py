"""Group commit (a PostgreSQL door): the requests waiting in one process are looked up and
committed together, and every guarantee holds inside a batch as between batches.

Requests gathered in one turn of the event loop form one batch (``asyncio.gather`` of
``Door.receive_async``: each reaches its lookup, then its commit, in the same turn), so the
batch-specific rules are tested on real batches: a messageId twice in one batch, a replay
among fresh messages, a commit that fails (the whole batch 503, nothing committed), a value
the database refuses (that request alone fails).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from muretai_cli.door.core import Door
from muretai_cli.inbox.arrival import Arrival
from muretai_cli.inbox.store import IdentityStore, door_namespace
from muretai_cli.seam import SigningKey
from tests.clock import Clock
from tests.door_helpers import make_door, send_request
from tests.store_helpers import door_store

NOW = 1_800_000_000


@pytest.fixture(params=[True, False], ids=["rates-shared", "rates-in-memory"])
def door(pg_url: str, request: pytest.FixtureRequest) -> Iterator[Door]:
    """A PostgreSQL door; its rate limits counted in the store (as ``serve`` on PostgreSQL:
    counted in the group commit that commits the message) or in memory."""
    made = make_door("open", "http://127.0.0.1:9", db=pg_url, shared_rate=request.param)
    assert made.grouped is not None  # a PostgreSQL door groups its commits
    yield made
    made.close()
    loop = LOOP.pop(made, None)
    if loop is not None:
        loop.close()


LOOP: dict[Door, asyncio.AbstractEventLoop] = {}  # a door serves on one loop, as in a server


def together(door: Door, bodies: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """POST bodies to the door at once (one batch): (HTTP status, JSON answer) each."""
    async def main() -> list[Any]:
        return await asyncio.gather(*(door.receive_async(json.dumps(b).encode())
                                      for b in bodies))

    loop = LOOP.setdefault(door, asyncio.new_event_loop())
    return [(answer[0], json.loads(answer[1]))
            for answer, _ in loop.run_until_complete(main())]


def outcome(answer: tuple[int, dict[str, Any]]) -> str:
    status, doc = answer
    if status == 503:
        return "503"
    if "error" in doc:
        return str(doc["error"]["code"])
    return "recovered" if doc["result"]["metadata"].get("recovered") else "accepted"


def inbox_texts(door: Door) -> list[str]:
    return sorted(m["text"] for m in door.store.inbox(None))


def env(mid: str, text: str, sender: str = "did:key:z6MkSender", **more: Any) -> Arrival:
    return Arrival.from_json({"from": sender, "messageId": mid, "contextId": None,
                              "text": text, "timestamp": NOW, "sig": "s", **more})


def accepted_of(results: list[tuple[bool, int]]) -> list[bool]:
    """Whether each accept was accepted (asserting none was refused by a rate limit)."""
    assert all(wait == 0 for _, wait in results), results
    return [accepted for accepted, _ in results]


def test_a_message_id_twice_in_one_batch_is_accepted_once_the_first_copy(
        backend: str) -> None:
    store: IdentityStore = door_store(SigningKey.generate().did, backend)
    try:
        batch = [(env("m-1", "first"), NOW, ()), (env("m-2", "other"), NOW, ()),
                 (env("m-1", "second"), NOW, ()), (env("m-1", "first"), NOW, ())]
        assert accepted_of(store.lookup_and_accept([], batch)[1]) == [True, True, False, False]
        assert sorted(m["text"] for m in store.inbox(None)) == ["first", "other"]
        looked, accepted = store.lookup_and_accept(
            [("m-1", "did:key:z6MkSender", NOW), ("m-3", "did:key:z6MkSender", NOW)],
            [(env("m-1", "again"), NOW, ())])
        assert looked == [(True, None), (False, None)] and accepted == [(False, 0)]
    finally:
        store.close()


def test_a_door_answers_each_request_of_a_mixed_batch_as_its_own(door: Door) -> None:
    alice, bob = SigningKey.generate(), SigningKey.generate()
    earlier = send_request(alice, door.did, "earlier", mid="m-earlier")
    assert outcome(together(door, [earlier])[0]) == "accepted"
    copy = send_request(bob, door.did, "same id, other sender", mid="m-earlier")
    twin = send_request(alice, door.did, "twin", mid="m-twin")
    answers = together(door, [
        send_request(alice, door.did, "fresh 1"),
        earlier,  # an exact repeat: the reply it was given, recovered
        copy,  # its messageId was taken: a replay
        twin, twin,  # twice in this batch: once accepted, once a replay
        send_request(bob, door.did, "fresh 2"),
    ])
    assert [outcome(a) for a in answers] == [
        "accepted", "recovered", "-32002", "accepted", "-32002", "accepted"]
    assert inbox_texts(door) == ["earlier", "fresh 1", "fresh 2", "twin"]


def test_a_batch_whose_commit_fails_is_503_for_every_request_and_commits_nothing(
        door: Door, pg_url: str) -> None:
    schema = door_namespace(door.did)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        # the first commit after this dies in COMMIT itself (a deferred trigger ends the
        # server process serving it); later ones go through
        conn.execute(f'CREATE SEQUENCE "{schema}".once')
        conn.execute(f'''CREATE FUNCTION "{schema}".die_once() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN IF nextval('"{schema}".once') = 1 THEN
            PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NULL; END $$''')
        conn.execute(f'CREATE CONSTRAINT TRIGGER die_once AFTER INSERT ON "{schema}".inbox '
                     f'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION '
                     f'"{schema}".die_once()')
    sender = SigningKey.generate()
    bodies = [send_request(sender, door.did, f"batch {i}", mid=f"m-{i}") for i in range(3)]
    assert [outcome(a) for a in together(door, bodies)] == ["503"] * 3
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute(f'SELECT count(*) FROM "{schema}".replay').fetchone() == (0,)
    assert inbox_texts(door) == []
    # the database is back: the same requests are taken, each once
    assert [outcome(a) for a in together(door, bodies)] == ["accepted"] * 3
    assert inbox_texts(door) == ["batch 0", "batch 1", "batch 2"]


def test_a_message_the_database_refuses_fails_alone_not_its_batch(
        door: Door, pg_url: str) -> None:
    schema = door_namespace(door.did)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        # a value this database refuses (as it would one its types cannot hold)
        conn.execute(f'''CREATE FUNCTION "{schema}".refuse() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN IF NEW.text = 'refused here' THEN RAISE EXCEPTION 'no'; END IF;
            RETURN NEW; END $$''')
        conn.execute(f'CREATE TRIGGER refuse BEFORE INSERT ON "{schema}".inbox '
                     f'FOR EACH ROW EXECUTE FUNCTION "{schema}".refuse()')
    sender = SigningKey.generate()
    answers = together(door, [send_request(sender, door.did, "before"),
                              send_request(sender, door.did, "refused here"),
                              send_request(sender, door.did, "after")])
    assert [outcome(a) for a in answers] == ["accepted", "-32603", "accepted"]
    assert inbox_texts(door) == ["after", "before"]


def test_batches_racing_in_two_processes_over_the_same_ids_never_deadlock(pg_url: str) -> None:
    """Two processes' batches holding the same messageIds in opposite orders: rows are
    written in messageId order, so each waits for the other at most once, never in a
    circle (PostgreSQL would abort one as a deadlock: a 503 for a whole batch)."""
    did = SigningKey.generate().did
    stores = [door_store(did, pg_url) for _ in range(2)]
    gate = threading.Barrier(2)
    outcomes: list[list[bool] | BaseException] = [[], []]

    def run(i: int) -> None:
        ids = [f"m-{n:03d}" for n in range(40)]
        batch = [(env(mid, f"from {i}"), NOW, ()) for mid in (ids if i == 0 else ids[::-1])]
        gate.wait()
        try:
            outcomes[i] = accepted_of(stores[i].lookup_and_accept([], batch)[1])
        except BaseException as exc:
            outcomes[i] = exc

    try:
        for _ in range(3):
            threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            first, second = outcomes
            assert isinstance(first, list) and isinstance(second, list), outcomes
            # every id accepted exactly once, by one process or the other
            assert [a + b for a, b in zip(first, second[::-1], strict=True)] == [1] * 40
            did = SigningKey.generate().did
            for store in stores:
                store.close()
            stores = [door_store(did, pg_url) for _ in range(2)]
    finally:
        for store in stores:
            store.close()


def test_a_batch_of_rate_counts_admits_as_one_at_a_time_would(backend: str) -> None:
    """``take_rates`` (one transaction per batch on PostgreSQL) gives each request the
    answer ``take_rate`` would give it in turn: a request counts against every bucket or
    none, and the counts it leaves are exact."""
    store: IdentityStore = door_store(SigningKey.generate().did, backend)
    try:
        now = 6_000_000  # the start of a window
        a, b = ("a", 2), ("b", 2)
        total = ("*", 3)
        items = [([a, total], now), ([a, total], now), ([a, total], now + 1),
                 ([b, total], now + 2), ([b, total], now + 3), ([total], now + 4)]
        assert store.take_rates(items) == [0, 0, 59, 0, 57, 56]
        counts: dict[str, int] = dict(store.db.all("SELECT bucket, used FROM rate"))
        assert counts == {"a": 2, "b": 1, "*": 3}
        # the next window starts again, and a later batch sees what this one counted
        assert store.take_rates([([a, total], now + 60), ([a, total], now + 5)]) == [0, 55]
    finally:
        store.close()


def test_rate_counts_of_two_processes_add_up_exactly(pg_url: str) -> None:
    """Two processes' batches of counts alone (``take_rates``, before a hold) over the same
    buckets, racing: exactly the limit admitted, never a deadlock (buckets locked in one
    order)."""
    admitted, counts, inbox = _two_processes_counting(pg_url, 1, 40, opposite=True,
                                                      commit=False)
    assert admitted == 30 and inbox == 0  # each sender once (its bucket holds 1), under 40
    assert counts["*"] == 30


def test_rates_counted_with_the_commit_admit_as_one_at_a_time_would(backend: str) -> None:
    """Accepts that carry rate limits (a door whose limits are shared) are counted in the
    batch that commits them: each gets the answer ``take_rate`` then ``accept`` would give
    it in turn; one refused by a limit writes nothing and counts nothing."""
    store: IdentityStore = door_store(SigningKey.generate().did, backend)
    try:
        a, b, c = "did:key:z6MkA", "did:key:z6MkB", "did:key:z6MkC"

        def item(mid: str, sender: str, per_sender: int = 2) -> tuple[Any, int, Any]:
            return env(mid, mid, sender), NOW, [(sender, per_sender), ("*", 5)]

        results = store.lookup_and_accept([], [
            item("m-1", a), item("m-2", a), item("m-3", a),  # a's third: its bucket is full
            item("m-4", b), item("m-4", b),  # a twin: both counted, the second a replay
            item("m-5", c, 9), item("m-6", c, 9)])[1]  # the total's bucket (5) is full
        assert results == [(True, 0), (True, 0), (False, 60), (True, 0), (False, 0),
                           (True, 0), (False, 60)]
        assert sorted(m["text"] for m in store.inbox(None)) == ["m-1", "m-2", "m-4", "m-5"]
        assert dict(store.db.all("SELECT bucket, used FROM rate")) == {a: 2, b: 2, c: 1, "*": 5}
    finally:
        store.close()


@pytest.mark.parametrize("policy", ["open", "quarantine"])
def test_a_door_counts_shared_limits_on_every_path(pg_url: str, policy: str) -> None:
    """Past a shared per-sender limit a request is 429 (-32004), within one batch too, and
    writes nothing: when the message is committed (counted with it), when a first contact
    is held (counted before the hold), and when the policy refuses (a blocked sender is
    counted as before)."""
    clock = Clock(NOW)  # the door's time: the test never crosses a rate window's edge
    door = make_door(policy, "http://127.0.0.1:9", db=pg_url, rate_per_sender=2,
                     rate_total=100, shared_rate=True, clock=clock)
    try:
        sender, blocked = SigningKey.generate(), SigningKey.generate()
        door.store.set_sender(blocked.did, "blocked", NOW)
        answers = together(door, [send_request(sender, door.did, f"m {i}", now=NOW)
                                  for i in range(3)])
        kept = "accepted" if policy == "open" else "-32014"
        assert sorted(outcome(a) for a in answers) == sorted([kept, kept, "-32004"])
        assert len(inbox_texts(door)) == (2 if policy == "open" else 0)
        assert len(door.store.requests()) == (0 if policy == "open" else 2)
        answers = together(door, [send_request(blocked, door.did, f"b {i}", now=NOW)
                                  for i in range(3)])
        assert sorted(outcome(a) for a in answers) == ["-32004", "-32010", "-32010"]
    finally:
        door.close()
        loop = LOOP.pop(door, None)
        if loop is not None:
            loop.close()


def _two_processes_counting(pg_url: str, per_sender: int, total: int, *, opposite: bool,
                            commit: bool = True) -> tuple[int, dict[str, int], int]:
    """Two processes' group commits (two stores on one database), racing: each commits one
    message from each of 30 senders, five to a batch, counted against ``(sender,
    per_sender)`` and ``("*", total)`` (in opposite sender orders if ``opposite``; only
    counted, through ``take_rates``, unless ``commit``). What was admitted, the counts
    left, and the inbox's size."""
    did = SigningKey.generate().did
    stores = [door_store(did, pg_url) for _ in range(2)]
    gate = threading.Barrier(2)
    results: list[list[bool]] = [[], []]

    def run(i: int) -> None:
        senders = [f"did:key:z6Mk{n:02d}" for n in range(30)]
        order = senders[::-1] if opposite and i == 1 else senders
        gate.wait()
        for chunk in range(0, 30, 5):
            batch = [(env(f"{i}-{s}", f"{i}", s), NOW, [(s, per_sender), ("*", total)])
                     for s in order[chunk:chunk + 5]]
            if commit:
                results[i] += [ok for ok, _ in stores[i].lookup_and_accept([], batch)[1]]
            else:
                results[i] += [wait == 0 for wait in stores[i].take_rates(
                    [(limits, now) for _, now, limits in batch])]

    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        admitted = sum(ok for r in results for ok in r)
        return (admitted, dict(stores[0].db.all("SELECT bucket, used FROM rate")),
                len(stores[0].inbox(None)))
    finally:
        for store in stores:
            store.close()


def test_rates_counted_with_commits_in_two_processes_add_up_exactly(pg_url: str) -> None:
    """Two processes' group commits counting the same buckets, racing: exactly the limit
    admitted and committed, never a deadlock (buckets locked in one order, then rows)."""
    admitted, counts, inbox = _two_processes_counting(pg_url, 1, 40, opposite=True)
    assert admitted == inbox == 30  # each sender once (its bucket holds 1)
    assert counts["*"] == 30


def test_the_relay_a_message_names_is_kept_from_a_batch(backend: str) -> None:
    """A message that names the sender's relay is committed with the rest of its batch,
    and the sender's ``peers`` row says the newest relay (one row per sender)."""
    store: IdentityStore = door_store(SigningKey.generate().did, backend)
    try:
        a, b = "did:key:z6MkA", "did:key:z6MkB"
        results = store.lookup_and_accept([], [
            (env("m-1", "one", a, relay="https://r1.example/r"), NOW, ()),
            (env("m-2", "two", a, relay="https://r2.example/r"), NOW, ()),
            (env("m-3", "three", b), NOW, ())])[1]
        assert accepted_of(results) == [True, True, True]
        assert store.peer_relay(a) == "https://r2.example/r"
        assert store.peer_relay(b) is None
        assert dict(store.db.all("SELECT text, relay FROM inbox")) == {
            "one": "https://r1.example/r", "two": "https://r2.example/r", "three": None}
    finally:
        store.close()


def test_a_shared_total_filling_under_two_processes_is_never_passed(pg_url: str) -> None:
    """Two processes' batches racing for the last of the door's total: the count never
    passes the limit, it equals what was admitted, and at most a batch is refused early
    (a batch whose bucket filled gives back what its first statement added)."""
    admitted, counts, inbox = _two_processes_counting(pg_url, 5, 17, opposite=False)
    assert 17 - 5 <= admitted <= 17
    assert counts["*"] == admitted == inbox
    assert sum(u for b, u in counts.items() if b != "*") == admitted  # all or none


def test_a_forged_message_is_refused_as_the_ladder_says_in_a_batch(door: Door) -> None:
    """Whichever way the store step goes, the ladder's answers hold: a taken messageId is a
    replay whatever its signature, a fresh one with a bad signature is refused as such, and
    neither writes anything."""
    alice = SigningKey.generate()
    genuine = send_request(alice, door.did, "genuine", mid="m-genuine")
    assert outcome(together(door, [genuine])[0]) == "accepted"
    forged_taken = send_request(alice, door.did, "forged", mid="m-genuine")
    forged_fresh = send_request(alice, door.did, "forged", mid="m-fresh")
    for forged in (forged_taken, forged_fresh):
        forged["params"]["message"]["parts"][0]["text"] = "edited after signing"
    answers = together(door, [forged_taken, forged_fresh,
                              send_request(alice, door.did, "next")])
    assert [outcome(a) for a in answers] == ["-32002", "-32001", "accepted"]
    assert inbox_texts(door) == ["genuine", "next"]
