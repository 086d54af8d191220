"""`muretai id rotate NAME`: a new op key and its root-signed KeyState; every message the
identity signs from then on is from the root DID, signed by the op key, the record attached;
`--root-file F` signs with a root kept elsewhere and leaves no root seed behind. A door accepts
those messages and pins the record; the door's card carries the current KeyState."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from muretai_cli.home import KeyStore, keys_dir
from tests.cli_helpers import new_identity, run, run_json
from tests.door_helpers import local_door, pinned_epoch


def _signed_to(to: str, text: str = "hello") -> dict[str, Any]:
    result = run("sign", "message", "--as", "alice", "--to", to, text)
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_rotate_then_messages_are_signed_by_the_op_key_with_the_record() -> None:
    alice = new_identity("alice")
    code, doc = run_json("id", "rotate", "alice")
    assert code == 0, doc
    assert doc["did"] == alice and doc["epoch"] == 1 and doc["opDid"] != alice
    message = _signed_to(alice)["params"]["message"]
    meta = message["metadata"]
    assert meta["from"] == alice and meta["keystate"] == doc["keystate"]
    # offline verify follows the record to the op key (a first contact: it says so)
    code, verdict = run_json("verify", "message", "-", "--to", alice,
                             input=json.dumps(message))
    assert code == 0 and verdict["results"][0]["reasons"][0]["code"] == "op-key", verdict
    # without the record, the op key's signature is not the root's
    bare = {**message, "metadata": {k: v for k, v in meta.items() if k != "keystate"}}
    code, verdict = run_json("verify", "message", "-", "--to", alice, input=json.dumps(bare))
    assert code == 1 and verdict["results"][0]["reasons"][0]["code"] == "bad-signature"
    forged = {**message, "metadata": {**meta, "keystate": {**meta["keystate"], "epoch": 7}}}
    code, verdict = run_json("verify", "message", "-", "--to", alice, input=json.dumps(forged))
    assert code == 1
    assert verdict["results"][0]["reasons"][0]["code"] == "keystate-bad-signature"
    from muretai_cli.seam import canonical_bytes, six_fields, verify_signature

    fields = six_fields({**message, **meta, "text": message["parts"][0]["text"]})
    verify_signature(doc["opDid"], canonical_bytes(fields), meta["sig"])
    # a second rotation burns the first op key and climbs an epoch
    code, again = run_json("id", "rotate", "alice")
    assert code == 0 and again["epoch"] == 2 and again["revokedOps"] == [doc["opDid"]]


def test_a_door_accepts_a_rotated_identity_and_refuses_its_rolled_back_record() -> None:
    new_identity("alice")
    with local_door("open") as door:
        code, first = run_json("id", "rotate", "alice")
        assert code == 0
        old = _signed_to(door.did, "first")
        assert "result" in door.rpc(old), "an op-key message is accepted"
        assert pinned_epoch(door, first["did"]) == 1
        assert run("id", "rotate", "alice").exit_code == 0
        assert "result" in door.rpc(_signed_to(door.did, "second"))
        assert pinned_epoch(door, first["did"]) == 2
        # the first op key, with its (genuine, older) record, is no longer this identity
        old["params"]["message"]["messageId"] = "m-replayed-by-a-thief"
        doc = door.rpc(old)
        assert doc["error"]["code"] == -32041
        assert doc["error"]["data"]["reason"] == "keystate-rollback"


def test_rotate_with_the_root_kept_offline(tmp_path: Path) -> None:
    alice = new_identity("alice")
    store = KeyStore(keys_dir())
    offline = tmp_path / "vault"
    offline.mkdir(mode=0o700)
    root_file = offline / "alice-root.key"
    shutil.copy(store.path_of("alice"), root_file)
    os.chmod(root_file, 0o600)
    code, doc = run_json("id", "rotate", "alice", "--root-file", str(root_file))
    assert code == 0 and doc["rootOffline"] is True, doc
    kept = json.loads(store.path_of("alice").read_text())
    assert "seed" not in kept and kept["op"]["did"] == doc["opDid"]
    # messages still go out, signed by the op key; what needs the root says so
    with local_door("open") as door:
        assert "result" in door.rpc(_signed_to(door.did))
    card = tmp_path / "card.json"
    card.write_text('{"name": "alice"}')
    result = run("sign", "card", str(card), "--as", "alice")
    assert result.exit_code != 0 and "root-offline" in result.stderr + result.stdout
    # the next rotation needs the root file, and works with it
    code, again = run_json("id", "rotate", "alice", "--root-file", str(root_file))
    assert code == 0 and again["epoch"] == 2 and again["did"] == alice
    assert run("id", "rotate", "alice").exit_code != 0  # no root here to sign with


def test_a_root_file_for_another_identity_is_refused(tmp_path: Path) -> None:
    new_identity("alice")
    new_identity("bob")
    store = KeyStore(keys_dir())
    code, doc = run_json("id", "rotate", "alice", "--root-file", str(store.path_of("bob")))
    assert code == 2 and doc["error"] == "root-mismatch", doc


def test_the_card_carries_the_current_keystate() -> None:
    from dataclasses import replace

    new_identity("door")
    code, doc = run_json("id", "rotate", "door")
    assert code == 0
    with local_door("open") as door:
        assert "keystate" not in door.door.card(0)
        door.door.config = replace(door.door.config, keystate=doc["keystate"])
        door.door.published.config = door.door.config
        assert door.door.card(0)["keystate"] == doc["keystate"]
    ident = KeyStore(keys_dir()).load("door")
    assert ident.keystate() == doc["keystate"]
    from muretai_cli.artifacts.keystate import verify_keystate

    assert verify_keystate(doc["keystate"], root_did=ident.did).op_did == doc["opDid"]


def test_serve_publishes_the_keystate_and_verifies_its_own_rotated_sender(
        tmp_path: Path) -> None:
    import httpx

    from tests.servers import running, start_serve

    new_identity("door")
    new_identity("alice")
    code, doc = run_json("id", "rotate", "door")
    assert code == 0 and run("id", "rotate", "alice").exit_code == 0
    with running(start_serve(tmp_path, "door", "--dm-policy", "open")) as served:
        card = httpx.get(f"{served.base}/.well-known/agent-card.json", timeout=5).json()
        assert card["keystate"] == doc["keystate"]
        answer = served.rpc(_signed_to(card["did"], "from a rotated sender"))
        assert "result" in answer, answer
