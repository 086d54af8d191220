"""Two relays on one PostgreSQL database, as two processes would be: each its own store
connection and its own LISTEN connection. Deposits, epochs and acks are shared; a held
poll on one wakes on a deposit through the other (NOTIFY, not polling); duplicate deposits
racing on both store one message."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from muretai_cli.relay.core import Relay
from muretai_cli.relay.limits import RelayConfig, RelayLimits
from muretai_cli.relay.pgnotify import PgNotifier
from muretai_cli.relay.store import RelayStore
from muretai_cli.seam import SigningKey
from muretai_cli.urls import parse_base_url
from tests.cli_helpers import run, run_json
from tests.relay_helpers import OnLoop, deposit_body, listen_body, listener_epoch
from tests.servers import start_relay
from tests.waiting import wait_until

URL = parse_base_url("https://relay.example")


def relay_on(pg_url: str, limits: RelayLimits | None = None) -> OnLoop:
    return OnLoop(Relay(RelayConfig(URL, limits or RelayLimits()), RelayStore.open(pg_url),
                        notifier=PgNotifier(pg_url)))


@pytest.fixture
def pair(pg_url: str) -> Iterator[tuple[OnLoop, OnLoop]]:
    a, b = relay_on(pg_url), relay_on(pg_url)
    yield a, b
    a.close()
    b.close()


def _listen(relay: OnLoop, key: SigningKey, *, wait: float, epoch: int = 1
            ) -> tuple[int, Any]:
    body = listen_body(key, URL.origin, epoch=epoch, wait=wait)
    answer = relay(relay.relay.listen(json.dumps(body).encode()))
    assert answer is not None
    return answer[0], json.loads(answer[1])


def test_a_poll_on_one_relay_wakes_on_a_deposit_through_the_other(
        pair: tuple[OnLoop, OnLoop]) -> None:
    on_a, on_b = pair
    b = on_b.relay
    alice, bob = SigningKey.generate(), SigningKey.generate()

    async def scenario() -> tuple[float, Any]:
        await b.notifier.start()
        assert isinstance(b.notifier, PgNotifier)
        await asyncio.wait_for(b.notifier.ready.wait(), 10)
        body = json.dumps(listen_body(bob, URL.origin, wait=20)).encode()
        poll = asyncio.ensure_future(b.listen(body))
        while b.notifier._local.listeners() == 0:  # until the poll is held, found nothing
            assert not poll.done()
            await asyncio.sleep(0.01)
        assert not poll.done()
        started = time.monotonic()
        sent = json.dumps(deposit_body(alice, bob, "wake")).encode()
        await asyncio.to_thread(on_a, on_a.relay.send(sent))  # on a's own loop
        answer = await asyncio.wait_for(poll, 10)
        await b.notifier.aclose()
        assert answer is not None
        return time.monotonic() - started, json.loads(answer[1])

    took, doc = on_b(scenario())
    assert [m["from"] for m in doc["messages"]] == [alice.did]
    assert took < 5  # woken by the signal, long before the 20 s wait


def test_racing_duplicate_deposits_on_two_relays_store_one(
        pair: tuple[OnLoop, OnLoop]) -> None:
    a, b = pair
    alice, bob = SigningKey.generate(), SigningKey.generate()
    raw = json.dumps(deposit_body(alice, bob, "once")).encode()
    answers: list[Any] = [None, None]
    gate = threading.Barrier(2)

    def send(i: int, relay: OnLoop) -> None:
        gate.wait()
        answers[i] = relay(relay.relay.send(raw))

    threads = [threading.Thread(target=send, args=(i, r)) for i, r in enumerate((a, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [x[0] for x in answers] == [200, 200]
    assert len(a.relay.store.waiting(bob.did, limit=10, since=0)[0]) == 1


def test_epochs_and_acks_are_shared(pair: tuple[OnLoop, OnLoop]) -> None:
    a, b = pair
    alice, bob = SigningKey.generate(), SigningKey.generate()
    assert a(a.relay.send(json.dumps(deposit_body(alice, bob, "x", deposit_id="d1")).encode())
             )[0] == 200
    status, doc = _listen(b, bob, wait=0, epoch=5)
    assert status == 200 and [m["id"] for m in doc["messages"]] == ["d1"]
    status, doc = _listen(a, bob, wait=0, epoch=4)
    assert status == 409
    ack = listen_body(bob, URL.origin, epoch=5) | {"ids": ["d1"]}
    assert json.loads(a(a.relay.ack(json.dumps(ack).encode()))[1])["acked"] == 1
    assert _listen(b, bob, wait=0, epoch=5)[1]["messages"] == []


@pytest.mark.slow
def test_two_relay_serve_processes_wake_each_other(pg_url: str, tmp_path: Path) -> None:
    code, doc = run_json("db", "init", "--relay", "--db", pg_url)
    assert code == 0 and doc["store"] == "relay"
    procs = [start_relay(tmp_path, "--db", pg_url, tag=str(i)) for i in range(2)]
    try:
        a, b = (p.wait_ready() for p in procs)
        alice, bob = SigningKey.generate(), SigningKey.generate()
        # Listen tokens name the relay's public origin (its --url), the same for both.
        held: list[Any] = []
        poll = threading.Thread(target=lambda: held.append(httpx.post(
            b.base + "/listen", json=listen_body(bob, "http://127.0.0.1:1", wait=20),
            timeout=40)))
        poll.start()
        wait_until(lambda: listener_epoch(pg_url, bob.did) == 1 or not poll.is_alive(),
                   "b has taken the poll")
        assert poll.is_alive() and not held, "the poll was answered before any deposit"
        started = time.monotonic()
        sent = httpx.post(a.base + "/send", json=deposit_body(alice, bob, "across"), timeout=10)
        assert sent.status_code == 200, sent.text
        poll.join(timeout=15)
        assert held and held[0].status_code == 200
        assert [m["from"] for m in held[0].json()["messages"]] == [alice.did]
        assert time.monotonic() - started < 8
    finally:
        for p in procs:
            p.stop()


def test_relay_workers_need_postgresql_and_an_initialised_schema(pg_server: str) -> None:
    refused = run("relay", "serve", "--url", "http://127.0.0.1:1", "--port", "0",
                  "--workers", "2")
    assert refused.exit_code == 2 and "workers-need-postgresql" in refused.stderr
    missing = run("relay", "serve", "--url", "http://127.0.0.1:1", "--port", "0",
                  "--db", pg_server)  # the server's own database: no relay schema there
    assert missing.exit_code == 2 and "muretai db init" in missing.stderr
    assert f"--relay --db {pg_server}" in missing.stderr  # the command that fixes it, whole


@pytest.mark.slow
def test_kill_9_of_one_relay_process_loses_nothing_queued_and_stores_nothing_twice(
        pg_url: str, tmp_path: Path) -> None:
    assert run_json("db", "init", "--relay", "--db", pg_url)[0] == 0
    procs = [start_relay(tmp_path, "--db", pg_url, "--rate-per-sender", "0",
                         "--rate-per-mailbox", "0", tag=str(i)) for i in range(2)]
    try:
        a, b = (p.wait_ready() for p in procs)
        senders = [SigningKey.generate() for _ in range(3)]
        bob = SigningKey.generate()
        queued: list[str] = []
        lock = threading.Lock()

        def deposit(sender: SigningKey) -> None:
            with httpx.Client(timeout=10) as client:
                for i in range(150):
                    body = deposit_body(sender, bob, f"{i}")
                    # round robin; a deposit whose relay died goes to the survivor (the
                    # same id and blob: stored once if the dead one had committed it)
                    for target in ((a, b) if i % 2 == 0 else (b, a)):
                        try:
                            resp = client.post(target.base + "/send", json=body)
                        except httpx.TransportError:
                            continue
                        if resp.status_code == 200 and resp.json().get("queued") is True:
                            with lock:
                                queued.append(body["id"])
                        break

        threads = [threading.Thread(target=deposit, args=(s,)) for s in senders]
        for thread in threads:
            thread.start()
        wait_until(lambda: len(queued) >= 60 or not any(t.is_alive() for t in threads),
                   "60 deposits are queued", timeout=60, interval=0.005)
        os.kill(a.proc.pid, signal.SIGKILL)  # mid-stream, with deposits in flight
        for thread in threads:
            thread.join(timeout=60)
        assert a.proc.wait(timeout=10) == -signal.SIGKILL
        assert len(queued) == len(senders) * 150, "a deposit was refused by the survivor"
        seen: list[str] = []
        for epoch in range(1, 100):
            body = listen_body(bob, "http://127.0.0.1:1", epoch=epoch, wait=0)
            doc = httpx.post(b.base + "/listen", json=body, timeout=10).json()
            ids = [m["id"] for m in doc["messages"]]
            seen += ids
            assert httpx.post(b.base + "/ack", json=body | {"ids": ids},
                              timeout=10).json() == {"acked": len(ids)}
            if not doc["more"]:
                break
        assert len(seen) == len(set(seen)), "a deposit was stored twice"
        assert set(seen) == set(queued), "a queued deposit was lost"
    finally:
        for p in procs:
            p.stop()
