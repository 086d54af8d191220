"""The per-identity store, once per backend (SQLite file, PostgreSQL schema).

Several stores opened on one place stand for several processes: each has its own
connection, and the guarantees below hold between them as they hold within one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from muretai_cli.errors import InputError, Refused
from muretai_cli.inbox.arrival import Arrival
from muretai_cli.inbox.store import REPLAY_WINDOW, IdentityStore
from muretai_cli.seam import SigningKey
from tests.store_helpers import door_store

NOW = 1_800_000_000
ME = SigningKey.generate()


def env(sender: str, mid: str, text: str = "hi", ts: int = NOW) -> Arrival:
    return Arrival.from_json({"from": sender, "messageId": mid, "contextId": None,
                              "text": text, "timestamp": ts, "sig": "s"})


def grant(gid: str, uses: int, *, iat: int = NOW, exp: int = NOW + 3600) -> dict[str, Any]:
    return {"id": gid, "uses": uses, "iat": iat, "exp": exp, "purpose": None}


@pytest.fixture
def stores(backend: str) -> Iterator[Callable[[], IdentityStore]]:
    """Open connections to one fresh identity's store (each call: one more 'process')."""
    did = SigningKey.generate().did
    opened: list[IdentityStore] = []

    def open_one() -> IdentityStore:
        store = door_store(did, backend)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


def race(n: int, work: Callable[[int], Any]) -> list[Any]:
    """Run ``work(i)`` for i in 0..n-1 on n threads released together; results in order."""
    out: list[Any] = [None] * n
    gate = threading.Barrier(n)

    def run(i: int) -> None:
        gate.wait()
        try:
            out[i] = work(i)
        except Exception as exc:  # the refusal is the result
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_accept_then_replay_and_lookup(stores: Callable[[], IdentityStore]) -> None:
    store = stores()
    a = SigningKey.generate().did
    assert store.lookup("m1", a, NOW) == (False, None)
    assert store.accept(env(a, "m1"), NOW) is True
    assert store.accept(env(a, "m1"), NOW) is False
    assert store.lookup("m1", a, NOW) == (True, None)
    assert store.lookup("m1", a, NOW + REPLAY_WINDOW + 1)[0] is False
    assert [m["messageId"] for m in store.inbox()] == ["m1"]


def test_an_inbox_row_whose_replay_row_was_pruned_is_still_a_replay(
        stores: Callable[[], IdentityStore]) -> None:
    store = stores()
    a = SigningKey.generate().did
    assert store.accept(env(a, "m1"), NOW)
    store.prune(NOW + REPLAY_WINDOW + 1)
    assert store.accept(env(a, "m1"), NOW + REPLAY_WINDOW + 1) is False
    assert len(store.inbox()) == 1


def test_a_message_id_accepted_through_one_connection_is_refused_by_all(
        stores: Callable[[], IdentityStore]) -> None:
    conns = [stores() for _ in range(6)]
    senders = [SigningKey.generate().did for _ in range(6)]
    results = race(6, lambda i: conns[i].accept(env(senders[i], "same-id"), NOW))
    assert sorted(results) == [False] * 5 + [True]
    assert len(conns[0].inbox()) == 1


def test_k_use_grant_redeemed_by_n_racing_senders_opens_exactly_k(
        stores: Callable[[], IdentityStore]) -> None:
    conns = [stores() for _ in range(8)]
    conns[0].add_grant(grant("g1", 3), NOW)
    senders = [SigningKey.generate().did for _ in range(8)]
    results = race(8, lambda i: conns[i].redeem("g1", senders[i], NOW))
    opened = [r for r in results if r == NOW + 3600]
    refused = [r for r in results if isinstance(r, Refused)]
    assert len(opened) == 3 and len(refused) == 5
    assert {r.code for r in refused} == {"exhausted"}
    row = conns[1].grant("g1")
    assert row is not None and row.used == 3
    assert conns[2].db.one("SELECT COUNT(*) FROM connections") == (3,)
    assert conns[2].card_grant(NOW) is None


def test_a_revoke_through_one_connection_is_seen_by_the_next_read_of_another(
        stores: Callable[[], IdentityStore]) -> None:
    owner, door = stores(), stores()
    owner.add_grant(grant("g1", 5), NOW)
    bob = SigningKey.generate().did
    door.redeem("g1", bob, NOW)
    assert door.sender_view(bob, NOW, None).valid_connection
    owner.revoke("g1", NOW)
    view = door.sender_view(bob, NOW, None)
    assert view.any_connection and not view.valid_connection
    with pytest.raises(Refused, match="revoked"):
        door.redeem("g1", SigningKey.generate().did, NOW)
    assert door.card_grant(NOW) is None


def test_redeem_again_changes_nothing_and_a_dropped_connection_stays_dropped(
        stores: Callable[[], IdentityStore]) -> None:
    store = stores()
    store.add_grant(grant("g1", 2), NOW)
    bob = SigningKey.generate().did
    assert store.redeem("g1", bob, NOW) == store.redeem("g1", bob, NOW + 1)
    row = store.grant("g1")
    assert row is not None and row.used == 1
    rid = store.hold(env(bob, "m1"), NOW)
    assert rid is not None
    store.reject(rid, NOW)
    with pytest.raises(Refused, match="connection-dropped"):
        store.redeem("g1", bob, NOW)
    for code, gid, doc in (("unknown-grant", "nope", None),
                           ("expired", "g2", grant("g2", 1, exp=NOW))):
        if doc:
            store.add_grant(doc, NOW)
        with pytest.raises(Refused, match=code):
            store.redeem(gid, bob, NOW)


def test_one_held_request_per_stranger_whoever_holds_it(
        stores: Callable[[], IdentityStore]) -> None:
    conns = [stores() for _ in range(6)]
    stranger = SigningKey.generate().did
    ids = race(6, lambda i: conns[i].hold(env(stranger, f"m{i}"), NOW))
    assert len(set(ids)) == 1 and isinstance(ids[0], str)
    # every message is kept (issue 12: none dropped), under the stranger's one request
    held = conns[0].requests()
    assert sorted(r["messageId"] for r in held) == [f"m{i}" for i in range(6)]
    assert held[0]["id"] == ids[0]


def test_holding_a_replayed_id_is_refused(stores: Callable[[], IdentityStore]) -> None:
    store = stores()
    a, b = SigningKey.generate().did, SigningKey.generate().did
    assert store.accept(env(a, "m1"), NOW)
    assert store.hold(env(b, "m1"), NOW) is None
    assert store.requests() == []


def test_approval_anywhere_applies_everywhere(stores: Callable[[], IdentityStore]) -> None:
    door, owner = stores(), stores()
    bob = SigningKey.generate().did
    rid = door.hold(env(bob, "m1", "first"), NOW)
    assert rid is not None
    with pytest.raises(InputError, match="no-such-request"):
        owner.approve("r-nope", NOW)
    out = owner.approve(rid, NOW + 5)
    assert out["status"] == "approved"
    assert door.lookup("m2", bob, NOW) == (False, "approved")
    [msg] = door.inbox()
    assert (msg["via"], msg["received"], msg["approved"]) == ("approved", NOW, NOW + 5)
    with pytest.raises(InputError, match="already-decided"):
        door.approve(rid, NOW)
    assert [d["action"] for d in owner.decisions()] == ["approve"]


def test_reject_block_unblock_and_lists(stores: Callable[[], IdentityStore]) -> None:
    store = stores()
    bob, carol = SigningKey.generate().did, SigningKey.generate().did
    rid = store.hold(env(bob, "m1"), NOW)
    assert rid is not None
    store.reject(rid, NOW, block=True)
    assert store.sender_status(bob) == "blocked"
    store.set_sender(carol, "allowed", NOW)
    assert {s["did"]: s["status"] for s in store.senders()} == {bob: "blocked",
                                                                 carol: "allowed"}
    store.set_sender(bob, None, NOW)
    assert store.sender_status(bob) is None
    assert [d["action"] for d in store.decisions()] == ["reject+block", "allow", "unblock"]
    assert [r["status"] for r in store.requests(all_=True)] == ["rejected"]
    assert store.requests() == []


def test_grants_list_newest_first_and_the_card_takes_the_newest_usable(
        stores: Callable[[], IdentityStore]) -> None:
    store = stores()
    for gid in ("g1", "g2", "g3"):
        store.add_grant(grant(gid, 1), NOW)
    assert [g.id for g in store.grants()] == ["g3", "g2", "g1"]
    card = store.card_grant(NOW)
    assert card is not None and card.id == "g3"
    rev = store.card_revision()
    store.revoke("g3", NOW)
    assert store.card_revision() != rev
    card = store.card_grant(NOW)
    assert card is not None and card.id == "g2"
    with pytest.raises(InputError, match="no-such-grant"):
        store.revoke("nope", NOW)


def test_inbox_order_and_limit(stores: Callable[[], IdentityStore]) -> None:
    store = stores()
    a = SigningKey.generate().did
    for i in range(5):
        store.accept(env(a, f"m{i}"), NOW + i)
    assert [m["messageId"] for m in store.inbox(3)] == ["m4", "m3", "m2"]
    assert len(store.inbox(None)) == 5
    assert all(m["verified"] is True for m in store.inbox(None))


def test_concurrent_accepts_of_distinct_messages_all_commit(
        stores: Callable[[], IdentityStore]) -> None:
    conns = [stores() for _ in range(4)]
    a = SigningKey.generate().did
    results = race(4, lambda i: conns[i].accept(env(a, f"m{i}"), NOW))
    assert results == [True] * 4
    assert len(conns[0].inbox(None)) == 4


def test_the_batch_sql_is_chosen_by_what_the_database_declares(
        stores: Callable[[], IdentityStore]) -> None:
    """One statement per batch (``JsonBatches``) where the database declares it can
    (PostgreSQL's ``json_batches``), each call in turn elsewhere; chosen once, at open."""
    from muretai_cli.inbox.store.bulk import InTurn, JsonBatches

    store = stores()
    assert isinstance(store.bulk, JsonBatches if store.db.json_batches else InTurn)
    assert store.db.json_batches == (store.db.describe().startswith("postgres"))
