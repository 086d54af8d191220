"""What strangers can make an identity keep before its owner decides is bounded (issue 22
item 4): per held sender (messages and characters) and in all, on the door's path and the
relay drain's alike (both hold through ``IdentityStore.hold``); the stranger keeps one
request whatever it sends, and approving it delivers what was kept, no more."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from muretai_cli.inbox.arrival import Arrival
from muretai_cli.inbox.store import IdentityStore, receipts
from muretai_cli.seam import SigningKey
from tests.door_helpers import code_of, local_door, send_request
from tests.store_helpers import door_store

NOW = 1_800_000_000


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounds small enough to reach in a test: 3 messages or 100 characters a sender,
    5 messages or 1,000 characters in all."""
    monkeypatch.setattr(receipts, "HELD_PER_SENDER", 3)
    monkeypatch.setattr(receipts, "HELD_PER_SENDER_CHARS", 100)
    monkeypatch.setattr(receipts, "HELD_TOTAL", 5)
    monkeypatch.setattr(receipts, "HELD_TOTAL_CHARS", 1000)


@pytest.fixture
def store(backend: str) -> Iterator[IdentityStore]:
    opened = door_store(SigningKey.generate().did, backend)
    yield opened
    opened.close()


def relayed(sender: str, mid: str, text: str = "hi", **more: Any) -> Arrival:
    return Arrival.from_json({"from": sender, "messageId": mid, "contextId": None,
                              "text": text, "timestamp": NOW, "sig": "s", "channel": "relay",
                              "depositId": f"d-{mid}", **more})


@pytest.mark.usefixtures("small")
def test_a_held_stranger_keeps_so_many_messages_on_the_door_path() -> None:
    with local_door("quarantine") as door:
        stranger = SigningKey.generate()
        answers = [door.rpc(send_request(stranger, door.did, f"m{i}")) for i in range(6)]
        assert [code_of(a) for a in answers] == [-32014] * 6
        assert len({a["error"]["data"]["requestId"] for a in answers}) == 1
        owner = door.store()
        try:
            held = owner.requests()
            assert [r["text"] for r in held] == ["m0", "m1", "m2"]  # the first three kept
            owner.approve(held[0]["id"], NOW)
            assert sorted(m["text"] for m in owner.inbox(None)) == ["m0", "m1", "m2"]
        finally:
            owner.close()


@pytest.mark.usefixtures("small")
def test_the_bound_counts_characters_too(store: IdentityStore) -> None:
    a = SigningKey.generate().did
    rid = store.hold(relayed(a, "m1", "x" * 60), NOW)
    assert store.hold(relayed(a, "m2", "y" * 41), NOW) == rid  # 101 characters: not kept
    assert store.hold(relayed(a, "m3", "z" * 40), NOW) == rid  # 100: kept
    assert [r["text"][0] for r in store.requests()] == ["x", "z"]
    unshown = {i["depositId"]: i for i in store.unshown()}
    assert unshown["d-m2"]["outcome"] == "refused"
    assert unshown["d-m2"]["reason"]["code"] == "held-limit"


@pytest.mark.usefixtures("small")
def test_all_strangers_together_are_bounded_and_a_new_one_is_refused(
        store: IdentityStore) -> None:
    from muretai_cli.errors import Refused

    strangers = [SigningKey.generate().did for _ in range(4)]
    for s in strangers[:2]:
        for i in range(3):
            store.hold(relayed(s, f"{s[-6:]}-{i}"), NOW)
    assert len(store.requests()) == 5  # the total: 3 + 2, the sixth not kept
    with pytest.raises(Refused) as full:
        store.hold(relayed(strangers[2], "late"), NOW)
    assert full.value.code == "held-full"
    assert len(store.requests()) == 5 and store.unshown()[-1]["from"] != strangers[2]


@pytest.mark.usefixtures("small")
def test_past_the_total_a_new_stranger_at_the_door_is_refused_and_nothing_kept() -> None:
    with local_door("quarantine") as door:
        for _ in range(5):
            assert code_of(door.rpc(send_request(SigningKey.generate(), door.did))) == -32014
        doc = door.rpc(send_request(SigningKey.generate(), door.did, "one too many"))
        assert (code_of(doc), doc["error"]["data"]["reason"]) == (-32010, "held-full")
        owner = door.store()
        try:
            assert len(owner.requests()) == 5
        finally:
            owner.close()


@pytest.mark.usefixtures("small")
def test_the_bounds_hold_over_processes_racing(backend: str) -> None:
    """Six holds from one stranger racing over six connections to one store (as six
    processes, two doors on one database): one request, exactly three messages kept."""
    import threading

    did = SigningKey.generate().did
    conns = [door_store(did, backend) for _ in range(6)]
    stranger = SigningKey.generate().did
    gate = threading.Barrier(6)
    ids: list[str | None] = [None] * 6

    def hold(i: int) -> None:
        gate.wait()
        ids[i] = conns[i].hold(relayed(stranger, f"m{i}"), NOW)

    threads = [threading.Thread(target=hold, args=(i,)) for i in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(set(ids)) == 1 and ids[0] is not None
        assert len(conns[0].requests()) == 3
    finally:
        for c in conns:
            c.close()


@pytest.mark.usefixtures("small")
def test_requests_list_shows_one_request_per_stranger_whatever_it_sent() -> None:
    from tests.cli_helpers import run, run_json

    with local_door("quarantine") as door:
        stranger, other = SigningKey.generate(), SigningKey.generate()
        for i in range(5):
            assert code_of(door.rpc(send_request(stranger, door.did, f"s{i}"))) == -32014
        assert code_of(door.rpc(send_request(other, door.did, "o0"))) == -32014
        code, listed = run_json("op", "--as", "door", "requests", "list")
        assert code == 0
        assert [(r["from"], [m["text"] for m in r["messages"]]) for r in listed["requests"]] \
            == [(stranger.did, ["s0", "s1", "s2"]), (other.did, ["o0"])]
        first = listed["requests"][0]["id"]
        assert run("op", "--as", "door", "requests", "approve", first).exit_code == 0
        code, inbox = run_json("op", "--as", "door", "inbox")
        assert sorted(m["text"] for m in inbox["messages"]) == ["s0", "s1", "s2"]
        code, listed = run_json("op", "--as", "door", "requests", "list")
        assert [r["from"] for r in listed["requests"]] == [other.did]
