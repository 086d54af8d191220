"""The relay's store on each backend, and the rules the relay keeps without HTTP (expiry)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.relay.core import Relay
from muretai_cli.relay.limits import RelayConfig, RelayLimits
from muretai_cli.relay.store import RelayStore
from muretai_cli.seam import SigningKey
from muretai_cli.urls import parse_base_url
from tests.relay_helpers import deposit_body, listen_body

ALICE, BOB = SigningKey(bytes([1]) * 32), SigningKey(bytes([2]) * 32)


def _put(store: RelayStore, deposit_id: str, blob: str = "b1", *, sender: str = ALICE.did,
         now: int = 100, max_waiting: int = 10) -> str:
    return store.deposit(to=BOB.did, sender=sender, sender_enc="ab" * 32,
                         deposit_id=deposit_id, blob=blob, now=now, max_waiting=max_waiting)


def test_deposits_duplicates_and_reused_ids(backend: str) -> None:
    store = RelayStore.open(backend)
    assert _put(store, "a") == "queued"
    assert _put(store, "a") == "duplicate"
    assert _put(store, "a", "b2") == "id-reused"
    assert _put(store, "a", sender=BOB.did) == "id-reused"
    assert _put(store, "b", max_waiting=2) == "queued"
    assert _put(store, "c", max_waiting=2) == "mailbox-full"
    found, more = store.waiting(BOB.did, limit=1, since=0)
    assert [m.id for m in found] == ["a"] and more
    assert [m.id for m in store.waiting(BOB.did, limit=5, since=0)[0]] == ["a", "b"]
    assert store.ack(BOB.did, ["a", "zz"]) == 1
    assert store.ack(ALICE.did, ["b"]) == 0  # only the mailbox's owner acks its messages
    assert store.expire(101) == 1
    assert store.waiting(BOB.did, limit=5, since=0) == ([], False)
    store.close()


def test_an_ack_of_many_ids_deletes_exactly_those_waiting(backend: str) -> None:
    store = RelayStore.open(backend)
    for i in range(250):
        assert _put(store, f"d{i}", max_waiting=1000) == "queued"
    # three statements' worth (100 ids each, the last padded), unknown ids mixed in
    ids = [f"d{i}" for i in range(0, 250, 2)] + [f"x{i}" for i in range(120)]
    assert store.ack(BOB.did, ids) == 125 and store.ack(BOB.did, ids) == 0
    left = store.waiting(BOB.did, limit=1000, since=0)[0]
    assert [m.id for m in left] == [f"d{i}" for i in range(1, 250, 2)]
    store.close()


def test_epochs_newest_wins(backend: str) -> None:
    store = RelayStore.open(backend)
    assert store.claim_epoch(BOB.did, 5) == "newer"
    assert store.claim_epoch(BOB.did, 5) == "current"
    assert store.claim_epoch(BOB.did, 4) == "superseded"
    assert store.claim_epoch(BOB.did, 6) == "newer"
    assert store.epoch(BOB.did) == 6
    store.close()


def test_cards_newest_wins(backend: str) -> None:
    store = RelayStore.open(backend)
    assert store.put_card(BOB.did, 10, '{"ts":10}')
    assert not store.put_card(BOB.did, 10, '{"ts":10,"x":1}')
    assert not store.put_card(BOB.did, 9, '{"ts":9}')
    assert store.put_card(BOB.did, 11, '{"ts":11}')
    assert store.card(BOB.did) == '{"ts":11}' and store.card(ALICE.did) is None
    store.close()


def test_a_message_older_than_the_expiry_is_never_delivered(tmp_path: Path) -> None:
    clock = [1_800_000_000.0]
    url = parse_base_url("https://relay.example")
    relay = Relay(RelayConfig(url, RelayLimits(expire_seconds=3600)),
                  RelayStore.open(tmp_path / "r.sqlite3"), clock=lambda: clock[0])
    assert asyncio.run(relay.send(json.dumps(deposit_body(ALICE, BOB)).encode()))[0] == 200
    clock[0] += 3601

    def listen() -> list[object]:
        body = listen_body(BOB, url.origin, wait=0, minute=int(clock[0] // 60))
        answer = asyncio.run(relay.listen(json.dumps(body).encode()))
        assert answer is not None and answer[0] == 200
        messages: list[object] = json.loads(answer[1])["messages"]
        return messages

    assert listen() == []  # expired, even before it is pruned
    assert relay.store.waiting(BOB.did, limit=5, since=0)[0]  # still stored...
    assert asyncio.run(relay.send(json.dumps(deposit_body(ALICE, BOB)).encode()))[0] == 200
    assert len(relay.store.waiting(BOB.did, limit=5, since=0)[0]) == 1  # ...pruned by a deposit
    assert len(listen()) == 1


def test_the_relay_imports_no_receiving_path_and_opens_no_box() -> None:
    """Blind by construction: no door/, inbox/, visit/ import and no box-opening name."""
    import ast

    import muretai_cli.relay

    for path in Path(muretai_cli.relay.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                names = {a.name for a in node.names}
            elif isinstance(node, ast.Import):
                module, names = "", {a.name for a in node.names}
            else:
                continue
            for bad in ("muretai_cli.door", "muretai_cli.inbox", "muretai_cli.visit"):
                assert not module.startswith(bad) and not any(n.startswith(bad) for n in names)
            assert not names & {"open_box", "box_key"}, path
        assert "open_box" not in path.read_text() and ".box_key" not in path.read_text()


def test_the_deposit_batch_is_chosen_by_what_the_database_declares(
        backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One statement per batch where the database declares ``json_batches`` (PostgreSQL),
    each deposit in turn elsewhere: the declaration chooses, whichever engine it is."""
    from muretai_cli.relay.store import Deposit

    store = RelayStore.open(backend)
    to = SigningKey.generate().did  # a mailbox of its own: the database may be shared
    assert store.db.json_batches == store.db.describe().startswith("postgres")
    assert store.db.notifies == store.db.json_batches
    one_by_one: list[str] = []
    real = store._deposit_one

    def spied(item: Deposit, max_waiting: int, max_bytes: int) -> Any:
        one_by_one.append(item.id)
        return real(item, max_waiting, max_bytes)

    monkeypatch.setattr(store, "_deposit_one", spied)

    def batch(*ids: str) -> list[str]:
        return list(store.deposit_many(
            [Deposit(to, ALICE.did, "ab" * 32, i, "b1", 100) for i in ids],
            max_waiting=10))

    assert batch("a", "b") == ["queued", "queued"]
    assert one_by_one == ([] if store.db.json_batches else ["a", "b"])
    monkeypatch.setattr(store.db, "json_batches", False)  # declared otherwise: in turn
    assert batch("c", "a") == ["queued", "duplicate"]
    assert one_by_one[-2:] == ["c", "a"]
    store.close()
