"""The card and its envelope over time, the org membership, and the database's durability."""

from __future__ import annotations

import json
import time

from muretai_cli.artifacts.org import attest_member
from muretai_cli.door.core import Door, DoorConfig
from muretai_cli.home import KeyStore, keys_dir
from muretai_cli.inbox.store import IdentityStore, db_path
from muretai_cli.seam import SigningKey, verify_card_envelope
from muretai_cli.urls import parse_base_url
from tests.cli_helpers import new_identity, run


class Clock:
    def __init__(self) -> None:
        self.now = float(int(time.time()))

    def __call__(self) -> float:
        return self.now


def make_door(clock: Clock, **config: object) -> Door:
    ident = KeyStore(keys_dir()).create("door")
    cfg = DoorConfig(name="door", url=parse_base_url("https://door.example/desk"),
                     **config)  # type: ignore[arg-type]
    return Door(ident.signing_key(), cfg, IdentityStore(db_path(ident.did)), clock=clock)


def test_envelope_resigned_hourly_and_on_change() -> None:
    clock = Clock()
    door = make_door(clock)
    env0 = json.loads(door.envelope_bytes())
    clock.now += 3599
    assert json.loads(door.envelope_bytes()) == env0  # cached
    clock.now += 1
    env1 = json.loads(door.envelope_bytes())
    assert env1["ts"] == env0["ts"] + 3600 and env1["card"] == env0["card"]
    verify_card_envelope(env1, expected_did=door.did)
    # a grant issued elsewhere (the CLI) changes the card at once
    assert run("contact", "issue", "--as", "door", "--uses", "1", "--expires", "2h").exit_code == 0
    card = json.loads(door.card_bytes())
    env2 = json.loads(door.envelope_bytes())
    assert "contact" in card and env2["card"] == card and env2["ts"] == int(clock.now)
    # ... and when that grant expires, it leaves the card
    clock.now += 3700
    assert "contact" not in json.loads(door.card_bytes())
    assert "contact" not in json.loads(door.envelope_bytes())["card"]

    # Served from the cache: neither rebuilt nor re-signed per request.
    built: list[int] = []
    build = door.card

    def counting_card(now: int) -> dict[str, object]:
        built.append(now)
        return build(now)

    door.card = counting_card  # type: ignore[method-assign]
    first, envelope = door.card_bytes(), door.envelope_bytes()
    assert door.card_bytes() is first and door.envelope_bytes() is envelope and built == []
    assert run("contact", "issue", "--as", "door", "--uses", "1", "--expires", "2h").exit_code == 0
    door.card_bytes()
    door.card_bytes()
    assert len(built) == 1, "a change in the store rebuilds the card, once"


def test_org_membership_on_card() -> None:
    clock = Clock()
    org = SigningKey.generate()
    door_key_did = new_identity("door")
    membership = attest_member(org, member_did=door_key_did, org_name="Example Org",
                               now=int(clock.now))
    ident = KeyStore(keys_dir()).load("door")
    door = Door(ident.signing_key(), DoorConfig(name="door", url=parse_base_url(
        "https://door.example"), org=membership), IdentityStore(db_path(ident.did)), clock=clock)
    assert json.loads(door.card_bytes())["org"] == membership


def test_serve_refuses_a_membership_for_another_agent(tmp_path: object) -> None:
    from pathlib import Path

    new_identity("door")
    org = SigningKey.generate()
    doc = attest_member(org, member_did=SigningKey.generate().did, org_name="X",
                        now=int(time.time()))
    path = Path(str(tmp_path)) / "org.json"
    path.write_text(json.dumps(doc))
    result = run("serve", "--as", "door", "--url", "http://127.0.0.1", "--port", "0",
                 "--org", str(path))
    assert result.exit_code == 1 and "membership-for-other-agent" in result.stderr


def test_durable_is_synchronous_full() -> None:
    did = SigningKey.generate().did
    normal = IdentityStore(db_path(did))
    assert normal.db.one("PRAGMA synchronous") == (1,)
    assert normal.db.one("PRAGMA journal_mode") == ("wal",)
    normal.close()
    durable = IdentityStore(db_path(did), durable=True)
    assert durable.db.one("PRAGMA synchronous") == (2,)
    durable.close()
