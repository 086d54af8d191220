"""Op keys in messaging: a message from a root DID, signed by the operational key a root-signed
KeyState (metadata.keystate) delegates, is verified under that op key after the record is
verified under the root; the sender's record is pinned in the identity's store, and a record
that does not verify, rolls the pin back, names a burned op key or has expired is refused
(-32041) each for its own reason. At a live door and on the relay drain."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.artifacts.keystate import mint_keystate
from muretai_cli.artifacts.message import Delegated, build_message_send, signed_message
from muretai_cli.inbox.store import IdentityStore
from muretai_cli.inbox.store.keystate_pins import KeyStatePinStore
from muretai_cli.seam import SigningKey, canonical_bytes, seal_box
from muretai_cli.visit.relay import Waiting
from muretai_cli.visit.turn import TurnCheck
from tests.door_helpers import Live, code_of, live_door, pinned_epoch
from tests.relay_helpers import OneAnswer

NOW = int(time.time())


class Sender:
    """A root identity and its op keys, minting records the way `id rotate` does."""

    def __init__(self) -> None:
        self.root = SigningKey.generate()
        self.ops = [SigningKey.generate() for _ in range(3)]

    def record(self, epoch: int, op: int, **kw: Any) -> dict[str, Any]:
        return mint_keystate(self.root, op_did=self.ops[op].did, epoch=epoch, now=NOW, **kw)

    def request(self, to: str, record: dict[str, Any], *, op: int, text: str = "hi"
                ) -> dict[str, Any]:
        key = Delegated(self.ops[op], self.root.did, record)
        return build_message_send(signed_message(key, to=to, text=text, now=int(time.time())))


@pytest.fixture()
def door() -> Iterator[Live]:
    with live_door("open") as live:
        yield live


def reason(doc: dict[str, Any]) -> tuple[int | None, str | None]:
    err = doc.get("error")
    return (err["code"], err["data"]["reason"]) if err else (None, None)


def test_an_op_key_message_is_accepted_and_its_record_pinned(door: Live) -> None:
    s = Sender()
    doc = door.rpc(s.request(door.did, s.record(1, 0), op=0))
    assert "result" in doc, doc
    assert pinned_epoch(door, s.root.did) == 1
    assert "result" in door.rpc(s.request(door.did, s.record(1, 0), op=0, text="again"))
    store = door.store()
    try:
        assert [m["from"] for m in store.inbox(None) if m["from"] == s.root.did] == \
            [s.root.did] * 2
    finally:
        store.close()


def test_a_rotation_is_followed_and_the_old_record_then_refused(door: Live) -> None:
    s = Sender()
    assert "result" in door.rpc(s.request(door.did, s.record(1, 0), op=0))
    assert "result" in door.rpc(s.request(door.did, s.record(2, 1, revoked_ops=[s.ops[0].did]),
                                          op=1))
    assert pinned_epoch(door, s.root.did) == 2
    # the thief holding op 0 replays the epoch-1 record in which it was still current
    assert reason(door.rpc(s.request(door.did, s.record(1, 0), op=0))) == \
        (-32041, "keystate-rollback")
    # a later record handing op 0 back: the pin burned it
    assert reason(door.rpc(s.request(door.did, s.record(3, 0), op=0))) == \
        (-32041, "keystate-revoked-op")
    assert pinned_epoch(door, s.root.did) == 2


def test_refusals_each_for_its_own_reason(door: Live) -> None:
    s = Sender()
    good = s.record(1, 0)
    forged = {**good, "opDid": s.ops[1].did}  # the root's signature no longer covers it
    expired = mint_keystate(s.root, op_did=s.ops[0].did, epoch=1, now=NOW - 7200,
                            not_after=NOW - 3600)
    burns_itself = s.record(1, 0, revoked_ops=[s.ops[0].did])
    burns_itself["revokedOps"] = [s.ops[0].did]  # the mint never burns its own op; re-sign
    from muretai_cli.artifacts.keystate import signed_payload

    burns_itself["sig"] = s.root.sign(signed_payload(burns_itself))
    cases = [(forged, 1, "keystate-bad-signature"), (expired, 0, "keystate-expired"),
             (burns_itself, 0, "keystate-revoked-op"),
             ({**good, "rootDid": SigningKey.generate().did}, 0, "keystate-root-mismatch")]
    for record, op, why in cases:
        assert reason(door.rpc(s.request(door.did, record, op=op))) == (-32041, why), why
    assert pinned_epoch(door, s.root.did) is None  # nothing refused was pinned


def test_the_op_key_must_be_the_one_the_record_names(door: Live) -> None:
    s = Sender()
    # signed by op 1 under a record naming op 0: the record is fine, the signature is not
    assert reason(door.rpc(s.request(door.did, s.record(1, 0), op=1))) == \
        (-32001, "bad-signature")
    # and a message signed by the op key without any record is not the root's
    bare = s.request(door.did, s.record(1, 0), op=0)
    del bare["params"]["message"]["metadata"]["keystate"]
    assert reason(door.rpc(bare)) == (-32001, "bad-signature")
    assert code_of(door.rpc(s.request(door.did, s.record(1, 0), op=0))) is None


def _deposit(s: Sender, bob: SigningKey, record: dict[str, Any], op: int, i: int) -> Waiting:
    request = s.request(bob.did, record, op=op, text=f"m{i}")
    return Waiting(f"d{i}", s.root.did, s.root.enc_pub,
                   seal_box(s.root, bob.enc_pub, canonical_bytes(request), ad=b""), NOW)


def test_on_the_relay_drain(tmp_path: Path) -> None:
    bob, s = SigningKey.generate(), Sender()
    items = [_deposit(s, bob, s.record(1, 0), 0, 0),
             _deposit(s, bob, s.record(2, 1, revoked_ops=[s.ops[0].did]), 1, 1),
             _deposit(s, bob, s.record(1, 0), 0, 2),
             _deposit(s, bob, {**s.record(3, 2), "epoch": 4}, 2, 3)]
    store = IdentityStore(tmp_path / "bob.sqlite3")
    try:
        counts = TurnCheck(bob, store, OneAnswer(items), "open").step(0).counts  # type: ignore[arg-type]
        assert counts == {"accepted": 2, "refused": 2}
        refused = {i["depositId"]: i["reason"]["code"] for i in store.unshown()
                   if i["outcome"] == "refused"}
        assert refused == {"d2": "keystate-rollback", "d3": "keystate-bad-signature"}
        assert KeyStatePinStore(store.db).get(s.root.did)["epoch"] == 2  # type: ignore[index]
    finally:
        store.close()


def test_the_pin_write_itself_only_moves_forward(backend: str) -> None:
    from muretai_cli.artifacts.keystate import parse_keystate
    from tests.store_helpers import door_store

    s = Sender()
    store = door_store(SigningKey.generate().did, backend)
    try:
        pins = KeyStatePinStore(store.db)
        assert pins.offer(parse_keystate(s.record(2, 1)), NOW)
        assert not pins.offer(parse_keystate(s.record(1, 0)), NOW)  # lower: kept as is
        assert not pins.offer(parse_keystate(s.record(2, 2)), NOW)  # equal: a fork, kept
        other_root = mint_keystate(SigningKey.generate(), op_did=s.ops[0].did, epoch=9, now=NOW)
        other_root["rootDid"] = s.root.did  # another root key claiming this root: kept
        assert not pins.offer(parse_keystate(other_root), NOW)
        assert pins.get(s.root.did)["opDid"] == s.ops[1].did  # type: ignore[index]
        assert pins.offer(parse_keystate(s.record(3, 2)), NOW)
    finally:
        store.close()


def test_a_door_on_either_backend_pins_and_refuses_a_rollback(backend: str) -> None:
    s = Sender()
    db = None if backend.endswith(".sqlite3") else backend
    with live_door("open", db=db) as door:
        assert "result" in door.rpc(s.request(door.did, s.record(2, 1), op=1))
        assert pinned_epoch(door, s.root.did) == 2
        assert reason(door.rpc(s.request(door.did, s.record(1, 0), op=0))) == \
            (-32041, "keystate-rollback")


@pytest.mark.parametrize("record", ["x", 5, [], None, {"typ": "muretai/keystate/1"},
                                    {"a": [[[[[[1]]]]]]}, {"typ": "muretai/keystate/1",
                                                           "epoch": 1.0}],
                         ids=["string", "number", "list", "null", "bare-typ", "nested",
                              "float-epoch"])
def test_a_hostile_record_is_a_named_refusal(record: Any) -> None:
    from tests.door_helpers import local_door

    s = Sender()
    with local_door("open") as door:
        req = s.request(door.did, s.record(1, 0), op=0)
        req["params"]["message"]["metadata"]["keystate"] = record
        doc = door.rpc(req)
        if record is None:  # no record: the root's key, which did not sign it
            assert reason(doc) == (-32001, "bad-signature")
        else:
            code, why = reason(doc)
            assert code == -32041 and why is not None and why.startswith("keystate-"), doc


def test_a_damaged_pin_fails_closed(tmp_path: Path) -> None:
    from muretai_cli.inbox.arrival import DOOR_WINDOW, read_message

    s, me = Sender(), SigningKey.generate()
    params = s.request(me.did, s.record(1, 0), op=0)["params"]
    arrival = read_message(params, me=me.did, now=int(time.time()), window=DOOR_WINDOW)
    assert arrival.verify(now=NOW) is not None  # first contact: the record to pin
    from muretai_cli.inbox.ladder import RpcError

    for damaged in ("{not json", '{"typ": "muretai/keystate/1"}'):
        with pytest.raises(RpcError) as info:
            arrival.verify(pinned=damaged, now=NOW)
        assert info.value.reason == "keystate-pin-unusable"
