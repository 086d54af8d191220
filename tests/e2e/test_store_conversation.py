"""The conversation's part of the per-identity store, once per backend (SQLite, PostgreSQL):
what was sent, peers' relays, relayed deposits shown once, the two-way view, holds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from muretai_cli.inbox.arrival import Arrival
from muretai_cli.inbox.store import IdentityStore
from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run_json
from tests.store_helpers import door_store

NOW = 1_800_000_000
PEER = SigningKey.generate().did


def env(mid: str, text: str, *, ctx: str | None = "c-1", **extra: Any) -> Arrival:
    return Arrival.from_json({"from": PEER, "messageId": mid, "contextId": ctx, "text": text,
                              "timestamp": NOW, "sig": "s", **extra})


@pytest.fixture
def store(backend: str) -> Iterator[IdentityStore]:
    opened = door_store(SigningKey.generate().did, backend)
    yield opened
    opened.close()


def test_both_directions_by_conversation(store: IdentityStore) -> None:
    store.record_sent(peer=PEER, message={"messageId": "m-out", "contextId": "c-1",
                                          "text": "hello", "timestamp": NOW - 5},
                      channel="relay", state="queued", now=NOW - 5, address="https://r")
    assert store.accept(env("m-in", "hi back", channel="relay", replyTo="m-out",
                            relay="https://r2", depositId="d-1"), NOW)
    assert store.accept(env("m-other", "elsewhere", ctx="c-2"), NOW - 100)
    view = store.conversation(peer=PEER, context="c-1")
    assert [(m["direction"], m["text"], m["replyTo"]) for m in view] == [
        ("out", "hello", None), ("in", "hi back", "m-out")]
    # c-1 has the latest message, so it comes last
    assert [m["contextId"] for m in store.conversation()] == ["c-2", "c-1", "c-1"]
    assert store.peer_relay(PEER) == "https://r2" and store.wrote_to(PEER)
    assert store.deposit_seen(PEER, "d-1") and not store.deposit_seen(PEER, "d-2")


def test_a_reply_in_the_same_second_comes_after_what_it_answers(store: IdentityStore) -> None:
    # seconds are coarse: the answer arrives in the second the question left, and an
    # answer to the answer in that second too; the reply chain orders them
    store.record_sent(peer=PEER, message={"messageId": "m-out", "contextId": "c-1",
                                          "text": "question", "timestamp": NOW},
                      channel="relay", state="queued", now=NOW, address="https://r")
    assert store.accept(env("m-in", "answer", channel="relay", replyTo="m-out"), NOW)
    store.record_sent(peer=PEER, message={"messageId": "m-out2", "contextId": "c-1",
                                          "text": "thanks", "timestamp": NOW},
                      channel="relay", state="queued", now=NOW, address="https://r",
                      reply_to="m-in")
    assert [m["text"] for m in store.conversation(peer=PEER)] == [
        "question", "answer", "thanks"]


def test_the_last_message_with_a_peer_is_the_reply_in_the_same_second(
        store: IdentityStore) -> None:
    store.record_sent(peer=PEER, message={"messageId": "m-out", "contextId": "c-1",
                                          "text": "question", "timestamp": NOW},
                      channel="relay", state="queued", now=NOW, address="https://r")
    assert store.accept(env("m-in", "answer", channel="relay", replyTo="m-out"), NOW)
    (summary,) = store.peers_summary()
    assert summary["did"] == PEER and summary["lastMessage"]["text"] == "answer"


def test_relayed_deposits_are_shown_once(store: IdentityStore) -> None:
    assert store.accept(env("m-1", "one", channel="relay", depositId="d-1"), NOW)
    store.record_refused(PEER, "d-2", "cannot-open", "no", NOW)
    store.record_refused(PEER, "d-2", "cannot-open", "again", NOW)  # reported once
    items = store.unshown()
    assert [(i["outcome"], i["depositId"]) for i in items] == [("accepted", "d-1"),
                                                               ("refused", "d-2")]
    assert items[0]["message"]["text"] == "one"
    store.mark_shown([i["row"] for i in items])
    assert store.unshown() == []


def test_every_held_message_is_kept_and_approved_together(store: IdentityStore) -> None:
    first = store.hold(env("m-1", "first", channel="relay", depositId="d-1"), NOW)
    second = store.hold(env("m-2", "second", channel="relay", depositId="d-2"), NOW)
    assert first and second == first  # one request per stranger, every message kept
    assert store.hold(env("m-1", "first", channel="relay", depositId="d-3"), NOW) is None
    assert [r["text"] for r in store.requests()] == ["first", "second"]
    store.approve(first, NOW + 1)
    assert [m["text"] for m in store.conversation()] == ["first", "second"]
    assert store.requests() == []


def test_settings_and_pending_held(store: IdentityStore) -> None:
    assert store.setting("policy") is None
    store.set_setting("policy", "open")
    store.set_setting("policy", "closed")
    assert store.setting("policy") == "closed"
    six = {"messageId": "m-h", "contextId": "c-9", "text": "knock", "timestamp": NOW}
    store.record_sent(peer=PEER, message=six, channel="door", state="held", now=NOW,
                      request_id="r-1")
    assert store.pending_held(PEER, "knock")["requestId"] == "r-1"  # type: ignore[index]
    assert store.pending_held(PEER, "other") is None
    store.record_sent(peer=PEER, message={**six, "messageId": "m-d"}, channel="door",
                      state="delivered", now=NOW)
    assert store.pending_held(PEER, "knock") is None  # delivered since: it was let in


def test_a_batch_commits_together_and_a_nested_failure_undoes_only_itself(
        store: IdentityStore) -> None:
    # turn-check commits a listen answer in one transaction: a replayed message inside it
    # (accept raises and rolls back its own part) leaves the rest of the batch standing
    with store.batch():
        assert store.accept(env("m-1", "one", channel="relay", depositId="d-1"), NOW)
        assert not store.accept(env("m-1", "one", channel="relay", depositId="d-1b"), NOW)
        # a store call whose own transaction fails (a savepoint here) takes back its part
        with pytest.raises(RuntimeError), store.db.transaction() as tx:
            tx.execute("INSERT INTO meta (key, value) VALUES ('probe', 'x')")
            raise RuntimeError("refused halfway")
        store.record_refused(PEER, "d-2", "cannot-open", "x", NOW)
    assert [i["depositId"] for i in store.unshown()] == ["d-1", "d-2"]
    assert store.setting("probe") is None
    with pytest.raises(RuntimeError), store.batch():  # killed mid-batch: none of it stays
        assert store.accept(env("m-3", "three", channel="relay", depositId="d-3"), NOW)
        raise RuntimeError("the process died here")
    assert store.received(PEER, "m-3") is None and not store.deposit_seen(PEER, "d-3")
    assert store.accept(env("m-3", "three", channel="relay", depositId="d-3"), NOW)


def test_claimed_rows_go_to_one_reader_and_an_unconfirmed_one_is_named_once(
        store: IdentityStore) -> None:
    for i in range(3):
        store.record_refused(PEER, f"d{i}", "cannot-open", "x", NOW)
    rows = [item["row"] for item in store.unshown()]
    assert store.claim(rows, "a") == rows and store.claim(rows, "b") == []
    store.mark_shown(rows[:1])
    assert [i["depositId"] for i in store.take_interrupted(lambda who: False)] == ["d1", "d2"]
    assert store.take_interrupted(lambda who: False) == [] and store.unshown() == []


def test_rows_a_live_claimant_holds_are_left_to_it(store: IdentityStore) -> None:
    for i in range(3):
        store.record_refused(PEER, f"d{i}", "cannot-open", "x", NOW)
    rows = [item["row"] for item in store.unshown()]
    assert store.claim(rows[:2], "live") == rows[:2] and store.claim(rows[2:], "dead")
    asked: list[str | None] = []

    def alive(who: str | None) -> bool:
        asked.append(who)
        return who == "live"

    assert [i["depositId"] for i in store.take_interrupted(alive)] == ["d2"]
    assert sorted(asked, key=str) == ["dead", "live", "live"]  # the claimant is kept
    store.mark_shown(rows[:2])  # the live one printed them
    assert store.take_interrupted(lambda who: False) == [] and store.unshown() == []


def test_what_turn_check_has_not_shown_is_found_through_the_index(store: IdentityStore) -> None:
    from muretai_cli.inbox.store import NEW, UNSHOWN

    if store.db.dialect == "sqlite":
        plan = " ".join(str(row[-1]) for row in store.db.all(f"EXPLAIN QUERY PLAN {UNSHOWN}",
                                                             (NEW,)))
        assert "USING INDEX relayed_shown" in plan, plan
        assert "TEMP B-TREE" not in plan  # the index gives the order too
        found = store.db.all("SELECT sql FROM sqlite_master WHERE name='relayed_shown'")
    else:
        found = store.db.all("SELECT indexdef FROM pg_indexes WHERE schemaname = "
                             "current_schema() AND indexname='relayed_shown'")
    assert len(found) == 1 and "shown, id" in found[0][0]


def test_a_version_6_store_upgrades_to_7_index_and_claimant(backend: str) -> None:
    from muretai_cli.db import open_database
    from muretai_cli.inbox.store import door_namespace, door_schema

    did = new_identity("erin")
    where = ["--as", "erin", "--db", backend]
    assert run_json("db", "init", *where)[0] == 0
    with open_database(backend, namespace=door_namespace(did)) as db, db.transaction() as tx:
        tx.execute("DROP INDEX relayed_shown")  # what version 6 left: neither of these
        tx.execute("ALTER TABLE relayed DROP COLUMN claimant")
        tx.execute("DROP TABLE keystate_pins")  # nor what version 8 adds
        tx.execute("UPDATE muretai_schema SET version=6 WHERE store='door'")
    code, doc = run_json("db", "status", *where)
    assert code == 1 and doc["schemaVersion"] == 6
    code, doc = run_json("db", "upgrade", *where)
    assert code == 0 and (doc["previousVersion"], doc["schemaVersion"]) == (
        6, door_schema().latest)
    store = door_store(did, backend)
    try:
        store.record_refused(PEER, "d-1", "cannot-open", "x", NOW)
        rows = [i["row"] for i in store.unshown()]
        assert store.claim(rows, "me") == rows
        assert store.db.one("SELECT claimant FROM relayed") == ("me",)
        test_what_turn_check_has_not_shown_is_found_through_the_index(store)
    finally:
        store.close()
