"""What a stranger can take from a relay, and what is left for everyone else (issue 22 §3).

Each limit against a real relay (uvicorn on 127.0.0.1), at its documented number
(docs/relay.md, "Limits"), and each test fails when its limit is removed.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from muretai_cli.seam import SigningKey, sign_card_envelope
from tests.relay_helpers import LiveRelay, deposit_body, live_relay
from tests.servers import wait_until

DAY = 86400


class Clock:
    """The relay's clock: it stands still (a bucket refills only when a test moves it)."""

    def __init__(self) -> None:
        self.now = time.time()  # a listen token names the real minute: start there

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def relay(tmp_path: Path, clock: Clock) -> Iterator[LiveRelay]:
    with live_relay(tmp_path / "relay.sqlite3", clock=clock) as live:
        yield live


def _send(client: httpx.Client, relay: LiveRelay, sender: SigningKey, to: SigningKey,
          text: str = "hi") -> int:
    answer = client.post(f"{relay.url}/send", content=json.dumps(
        deposit_body(sender, to, text)).encode(), headers={"content-type": "application/json"})
    return answer.status_code


def test_fresh_keys_flooding_a_mailbox_do_not_starve_a_correspondent(relay: LiveRelay) -> None:
    """~10 deposits/s from fresh keys use up bob's mailbox rate (600/min); alice, whom bob
    wrote to, still gets through, six times out of six; another stranger does not."""
    bob, alice = SigningKey.generate(), SigningKey.generate()
    with httpx.Client(timeout=30) as client:
        assert _send(client, relay, bob, alice, "hello alice") == 200  # bob writes first
        flood = [_send(client, relay, SigningKey.generate(), bob) for _ in range(610)]
        assert flood.count(200) == 600 and flood[-1] == 429  # the shared lane is used up
        assert [_send(client, relay, alice, bob, f"reply {i}") for i in range(6)] == [200] * 6
        assert _send(client, relay, SigningKey.generate(), bob) == 429
        # the lane is alice's only: she still has her own sender bound (60/min)
        assert [_send(client, relay, alice, bob) for _ in range(60)].count(429) > 0


def _card(client: httpx.Client, relay: LiveRelay, key: SigningKey, ts: int) -> httpx.Response:
    card = {"did": key.did, "name": "n", "url": "", "relay": relay.url, "enc_pub": key.enc_pub}
    return client.post(f"{relay.url}/card", content=json.dumps(
        sign_card_envelope(key, card, ts)).encode(), headers={"content-type": "application/json"})


def test_card_posts_are_rate_limited_per_did_and_for_new_cards(relay: LiveRelay,
                                                               clock: Clock) -> None:
    alice, now = SigningKey.generate(), int(clock.now)
    with httpx.Client(timeout=30) as client:
        answers = [_card(client, relay, alice, now - 100 + i).status_code
                   for i in range(11)]
        assert answers == [200] * 10 + [429]  # 10 per minute by one DID
        fresh = [_card(client, relay, SigningKey.generate(), now).status_code
                 for _ in range(60)]
        assert fresh.count(200) == 59 and fresh[-1] == 429  # 60 new cards a minute, alice's
        # first one among them; a DID the relay holds a card for still refreshes it
        bob = SigningKey.generate()
        relay.relay.store.put_card(bob.did, 1, "{}")
        assert _card(client, relay, bob, now).status_code == 200


def test_cards_of_dids_that_never_listened_are_capped_and_pruned(
        backend: str, clock: Clock) -> None:
    now = int(clock.now)
    if "://" in backend:  # a PostgreSQL database is shared by the module's tests: start empty
        from muretai_cli.relay.store import RelayStore

        store = RelayStore.open(backend)
        store.db.execute("DELETE FROM relay_cards")
        store.close()
    with live_relay(backend, clock=clock, stranger_cards=3) as relay, \
            httpx.Client(timeout=30) as client:
        old = SigningKey.generate()
        assert _card(client, relay, old, now - 8 * DAY).status_code == 200
        for _ in range(2):
            assert _card(client, relay, SigningKey.generate(), now).status_code == 200
        refused = _card(client, relay, SigningKey.generate(), now)
        assert refused.status_code == 507 and refused.json()["error"] == "relay-full"
        listener = SigningKey.generate()  # a DID that listened is not a stranger
        assert relay.listen(listener).status_code == 200
        assert _card(client, relay, listener, now - 8 * DAY).status_code == 200
        clock.now += 60  # the relay's once-a-minute expiry: a week-old stranger card goes
        assert _card(client, relay, SigningKey.generate(), now).status_code == 200
        assert relay.relay.store.card(old.did) is None
        assert relay.relay.store.card(listener.did) is not None


def _blob_of(sender: SigningKey, to: SigningKey) -> int:
    return len(deposit_body(sender, to, "x" * 1000)["blob"])


def test_a_mailbox_holds_at_most_its_bytes(backend: str, clock: Clock) -> None:
    """On both backends (PostgreSQL: through the group commit's statement)."""
    alice, bob = SigningKey.generate(), SigningKey.generate()
    size = _blob_of(alice, bob)
    with live_relay(backend, clock=clock, max_mailbox_bytes=3 * size + 10) as relay, \
            httpx.Client(timeout=30) as client:
        answers = [_send(client, relay, SigningKey.generate(), bob, "x" * 1000)
                   for _ in range(4)]
        assert answers == [200, 200, 200, 507]
        assert _send(client, relay, alice, SigningKey.generate(), "x" * 1000) == 200


def test_a_batch_into_one_mailbox_keeps_the_byte_cap(backend: str) -> None:
    from muretai_cli.relay.store import Deposit, RelayStore

    store = RelayStore.open(backend)
    bob = SigningKey.generate().did
    try:
        before = store.held_bytes()  # a PostgreSQL database is shared by the module's tests
        items = [Deposit(bob, SigningKey.generate().did, "ab" * 32, f"d{i}", "A" * 100, 1)
                 for i in range(4)]
        assert store.deposit_many(items, max_waiting=10, max_bytes=250) == [
            "queued", "queued", "mailbox-full", "mailbox-full"]
        assert store.held_bytes() == (before[0] + 200, before[1] + 200)
    finally:
        store.close()


def test_deposits_for_dids_that_never_listened_are_capped_relay_wide(clock: Clock,
                                                                    tmp_path: Path) -> None:
    """Fresh keys filling fresh mailboxes (120 x 256 KiB in the attack): at most
    ``max_stranger_bytes`` wait for DIDs that never listened; one that listened still gets
    mail."""
    size = _blob_of(SigningKey.generate(), SigningKey.generate())
    with live_relay(tmp_path / "relay.sqlite3", clock=clock,
                    max_stranger_bytes=5 * size + 10) as relay, \
            httpx.Client(timeout=30) as client:
        answers = [_send(client, relay, SigningKey.generate(), SigningKey.generate(), "x" * 1000)
                   for _ in range(7)]
        assert answers == [200] * 5 + [507] * 2
        listener = SigningKey.generate()
        assert relay.listen(listener).status_code == 200
        assert _send(client, relay, SigningKey.generate(), listener, "x" * 1000) == 200


def test_the_relay_holds_at_most_its_bytes(clock: Clock, tmp_path: Path) -> None:
    size = _blob_of(SigningKey.generate(), SigningKey.generate())
    with live_relay(tmp_path / "relay.sqlite3", clock=clock,
                    max_relay_bytes=4 * size + 10) as relay, httpx.Client(timeout=30) as client:
        listeners = [SigningKey.generate() for _ in range(5)]
        for key in listeners:
            assert relay.listen(key).status_code == 200
        answers = [_send(client, relay, SigningKey.generate(), key, "x" * 1000)
                   for key in listeners]
        assert answers == [200] * 4 + [507]
        full = client.post(f"{relay.url}/send", content=json.dumps(deposit_body(
            SigningKey.generate(), listeners[0], "x" * 1000)).encode())
        assert full.json()["error"] == "relay-full"


def _holding(relay: LiveRelay, pool: ThreadPoolExecutor, key: SigningKey, wait: float,
             epoch: int = 1) -> Future[httpx.Response]:
    """A listen held open on a connection of its own; returns once the relay holds it."""
    before = relay.relay.notifier.listeners()  # type: ignore[attr-defined]
    held = pool.submit(relay.listen, key, epoch=epoch, wait=wait)
    wait_until(lambda: relay.relay.notifier.listeners() > before,  # type: ignore[attr-defined]
               "the relay holds the listen")
    return held


def test_held_listens_give_way_to_a_newcomer_oldest_first(tmp_path: Path) -> None:
    """Held listens fill --max-connections (6 here): a newcomer is served, not refused
    503, and the listen held longest is answered at once (the client listens again)."""
    with live_relay(tmp_path / "relay.sqlite3", max_connections=6) as relay, \
            ThreadPoolExecutor(8) as pool:
        keys = [SigningKey.generate() for _ in range(6)]
        held = [_holding(relay, pool, key, wait=10) for key in keys]
        started = time.monotonic()
        newcomer = relay.deposit(SigningKey.generate(), keys[3])
        assert newcomer.status_code == 200
        oldest = held[0].result(timeout=5)
        assert time.monotonic() - started < 5  # long before its 10 s
        assert oldest.status_code == 200 and oldest.json() == {"messages": [], "more": False}
        assert len(held[3].result(timeout=5).json()["messages"]) == 1  # woken by its mail
        assert [held[i].done() for i in (1, 2, 4, 5)] == [False] * 4  # the others still held


def test_one_did_holds_at_most_four_listens(tmp_path: Path) -> None:
    with live_relay(tmp_path / "relay.sqlite3") as relay, ThreadPoolExecutor(6) as pool:
        bob = SigningKey.generate()
        held = [_holding(relay, pool, bob, wait=10) for _ in range(4)]
        assert not any(h.done() for h in held)
        fifth = pool.submit(relay.listen, bob, wait=10)  # the oldest gives way to it
        assert held[0].result(timeout=5).json() == {"messages": [], "more": False}
        assert [h.done() for h in held[1:]] == [False, False, False] and not fifth.done()


def test_a_store_from_before_the_byte_bounds_counts_what_it_holds(backend: str) -> None:
    """Schema version 2 gives every waiting message its size: what a relay held before the
    byte bounds is counted by them."""
    from muretai_cli.db import Schema, open_database, upgrade
    from muretai_cli.relay.store import NAMESPACE, SCHEMA, RelayStore

    if "://" in backend:  # the module's database holds a relay store already: a fresh one
        import psycopg

        name = f"t_v1_{secrets.token_hex(6)}"  # dropped with the throwaway server
        with psycopg.connect(backend, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        backend = urlunsplit(urlsplit(backend)._replace(path=f"/{name}"))
    db = open_database(backend, namespace=NAMESPACE)
    try:
        upgrade(db, Schema("relay", SCHEMA.migrations[:1]))  # a version-1 relay store
        db.execute("DELETE FROM relay_messages")
        db.execute("INSERT INTO relay_messages (to_did, from_did, from_enc, id, blob, digest, "
                   "received) VALUES ('did:key:zA', 'did:key:zB', 'e', 'd1', ?, ?, 1)",
                   ("Q" * 1000, b"x"))
    finally:
        db.close()
    store = RelayStore.open(backend)
    try:
        assert store.held_bytes() == (1000, 1000)
        assert store.deposit(to="did:key:zA", sender="did:key:zC", sender_enc="e",
                             deposit_id="d2", blob="Q" * 100, now=2, max_waiting=10,
                             max_bytes=1050) == "mailbox-full"
    finally:
        store.close()
