"""turn-check's drain: against a real relay, 250 waiting take three listens and three acks
(a listen answer is at most 100), all on one kept-alive client closed when the drain ends;
a database failure mid-answer commits and acknowledges nothing of it (never a refusal); a
deposit listed twice, or again, is stored and shown once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.artifacts.message import build_message_send, signed_message
from muretai_cli.db import DatabaseUnavailable
from muretai_cli.inbox.store import IdentityStore
from muretai_cli.net import SafeClient
from muretai_cli.seam import SigningKey, canonical_bytes, seal_box
from muretai_cli.visit.relay import RelayClient, Waiting
from muretai_cli.visit.turn import TurnCheck
from tests.relay_helpers import OneAnswer, fill_mailbox, live_relay


def test_a_drain_reuses_one_client_for_every_listen_and_ack(tmp_path: Path) -> None:
    bob = SigningKey.generate()
    made: list[SafeClient] = []

    def client_for(seconds: float, max_bytes: int) -> SafeClient:
        made.append(SafeClient(timeout=seconds, max_bytes=max_bytes))
        return made[-1]

    with live_relay(tmp_path / "relay.sqlite3", max_waiting=1000) as relay:
        texts = fill_mailbox(tmp_path / "relay.sqlite3", bob, 250)
        store = IdentityStore(tmp_path / "bob.sqlite3")
        try:
            relay_client = RelayClient(relay.url, client_for)
            check = TurnCheck(bob, store, relay_client, "open")
            assert check.drain(0) == 250
            shown = [i["message"]["text"] for i in store.unshown()]
            assert sorted(shown) == sorted(texts.values())
            assert len(made) == 1  # three listens and three acks, one client
            assert [a["status"] for a in made[0].attempts] == [200]  # each request rearmed it
            assert relay_client._kept is None  # closed with the drain
            assert relay.relay.store.waiting(bob.did, limit=10, since=0) == ([], False)
            assert check.drain(0) == 0 and len(made) == 2  # the next drain: its own client
        finally:
            store.close()


def _waiting(bob: SigningKey, count: int) -> list[Waiting]:
    out = []
    for i in range(count):
        sender = SigningKey.generate()
        request = build_message_send(signed_message(sender, to=bob.did, text=f"m{i}",
                                                    now=int(time.time()), context_id="c"))
        out.append(Waiting(f"d{i}", sender.did, sender.enc_pub,
                           seal_box(sender, bob.enc_pub, canonical_bytes(request), ad=b""),
                           int(time.time())))
    return out


def test_a_database_failure_mid_answer_commits_and_acks_nothing_of_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # never "refused" (acked, so gone from the relay): the relay gives all of it again
    bob = SigningKey.generate()
    items = _waiting(bob, 3)
    store = IdentityStore(tmp_path / "bob.sqlite3")
    real = store.accept
    calls: list[int] = []

    def failing(env: Any, now: int) -> bool:
        calls.append(1)
        if len(calls) == 2:
            raise DatabaseUnavailable("database-unavailable", "the disk went away")
        return real(env, now)

    try:
        relay = OneAnswer(list(items))
        monkeypatch.setattr(store, "accept", failing)
        with pytest.raises(DatabaseUnavailable):
            TurnCheck(bob, store, relay, "open").drain(0)  # type: ignore[arg-type]
        assert relay.acked == [] and store.unshown() == []  # the first one rolled back too
        monkeypatch.setattr(store, "accept", real)
        relay = OneAnswer(list(items))
        assert TurnCheck(bob, store, relay, "open").drain(0) == 3  # type: ignore[arg-type]
        assert [i["message"]["text"] for i in store.unshown()] == ["m0", "m1", "m2"]
        assert relay.acked == ["d0", "d1", "d2"]
    finally:
        store.close()


def test_a_deposit_listed_twice_or_again_is_stored_and_shown_once(tmp_path: Path) -> None:
    bob = SigningKey.generate()
    items = _waiting(bob, 2)
    store = IdentityStore(tmp_path / "bob.sqlite3")
    try:
        relay = OneAnswer([items[0], items[0], items[1]])  # a relay that lists one twice
        check = TurnCheck(bob, store, relay, "open")  # type: ignore[arg-type]
        assert check.step(0).counts == {"accepted": 2, "duplicate": 1}
        relay.items = [items[1], items[0]]  # both again, as after a lost ack
        assert check.step(0).counts == {"duplicate": 2}
        assert [i["message"]["text"] for i in store.unshown()] == ["m0", "m1"]
    finally:
        store.close()


def test_which_deposits_are_committed_is_one_read_per_hundred(backend: str) -> None:
    from tests.store_helpers import door_store

    store = door_store(SigningKey.generate().did, backend)
    try:
        for i in range(0, 150, 3):
            store.record_refused(f"s{i % 5}", f"d{i}", "cannot-open", "x", 1)
        pairs = [(f"s{i % 5}", f"d{i}") for i in range(150)] + [("s9", "d0")]
        assert store.deposits_seen(pairs) == {(f"s{i % 5}", f"d{i}") for i in range(0, 150, 3)}
        assert store.deposits_seen([]) == set()
    finally:
        store.close()
