"""A relayed invite claim is judged as of when the relay took it (issue 22 §9).

The inviter judges a relayed claim at its next turn-check (docs/invites.md), maybe days
later. Before, the claim was held to the door's ±300 s of NOW, so an inviter offline for
five minutes refused every claim (``stale``) and the joiner's first message was held as a
stranger's. Now it is judged against the relay's ``received``: signed within ±300 s of it,
the invite unexpired then, deposited at most 30 days ago (the relay's age window); revoked
and used-up are judged now.

Real relay (uvicorn on 127.0.0.1), real ``invite create`` and ``join``; the inviter's
turn-check runs in-process with an injected clock (``TurnCheck(clock=...)``), not by waiting.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from muretai_cli.artifacts.invite import build_claim, verify_invite
from muretai_cli.cli._visitout import client_for
from muretai_cli.inbox.store import IdentityStore, db_path
from muretai_cli.seam import SigningKey, canonical_bytes, seal_box
from muretai_cli.visit.relay import RelayClient
from muretai_cli.visit.turn import TurnCheck, event_of
from tests.cli_helpers import run
from tests.relay_helpers import LiveRelay, deposit_body, live_relay, relay_identities

DAY = 86400


def _people(relay: LiveRelay) -> dict[str, SigningKey]:
    return relay_identities(relay, "ines", "jo")


def _invite(ttl: str) -> dict[str, Any]:
    made = run("invite", "create", "--as", "ines", "--ttl", ttl, "--json")
    assert made.exit_code == 0, made.stderr
    doc: dict[str, Any] = json.loads(made.stdout)
    return doc


def _turn_check(ines: SigningKey, relay: LiveRelay, *, at: float) -> list[dict[str, Any]]:
    """ines's turn-check as the CLI runs it, its clock at ``at``: the events it shows."""
    store = IdentityStore(db_path(ines.did))
    try:
        check = TurnCheck(ines, store, RelayClient(relay.url, client_for), "quarantine",
                          clock=lambda: at)
        check.drain(0)
        items = check.unshown()
        check.shown(check.claim(items))
        return [event_of(i) for i in items]
    finally:
        store.close()


def _kinds(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["event"], e["reason"]["code"] if e["event"] == "refused" else
             e.get("text") or e.get("name", "")) for e in events]


def test_a_claim_read_days_later_is_honoured_and_its_message_not_held(tmp_path: Path) -> None:
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        keys = _people(relay)
        made = _invite("7d")
        joined = run("join", made["text"], "--as", "jo", "--name", "Jo", "--message", "hi")
        assert joined.exit_code == 0, joined.stderr
        events = _turn_check(keys["ines"], relay, at=time.time() + 3 * DAY)
    assert _kinds(events) == [("joined", "Jo"), ("message", "hi")]  # not held: allowed


def test_a_claim_deposited_while_the_invite_was_live_is_honoured_after_it_expired(
        tmp_path: Path) -> None:
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        keys = _people(relay)
        made = _invite("1h")
        assert run("join", made["text"], "--as", "jo", "--name", "Jo").exit_code == 0
        events = _turn_check(keys["ines"], relay, at=time.time() + 2 * 3600)
    assert _kinds(events) == [("joined", "Jo")]


def test_a_claim_past_the_relays_age_window_is_refused(tmp_path: Path) -> None:
    with live_relay(tmp_path / "relay.sqlite3", expire_seconds=60 * DAY) as relay:
        keys = _people(relay)
        made = _invite("90d")
        assert run("join", made["text"], "--as", "jo", "--name", "Jo").exit_code == 0
        events = _turn_check(keys["ines"], relay, at=time.time() + 31 * DAY)
    assert _kinds(events) == [("refused", "too-old")]


def test_a_claim_signed_long_before_its_deposit_is_stale(tmp_path: Path) -> None:
    """Backdating a claim into the invite's life does not work: it must be signed within
    ±300 s of when the relay took it."""
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        keys = _people(relay)
        made = _invite("7d")
        invite = verify_invite(made["invite"], now=int(time.time()))
        claim = build_claim(keys["jo"], invite=invite, name="Jo", now=int(time.time()) - 400,
                            enc_pub=keys["jo"].enc_pub)
        request = {"jsonrpc": "2.0", "id": 1, "method": "onboard/claim", "params": claim}
        blob = seal_box(keys["jo"], keys["ines"].enc_pub, canonical_bytes(request), ad=b"")
        deposited = relay.post("send", deposit_body(keys["jo"], keys["ines"], blob=blob))
        assert deposited.status_code == 200, deposited.text
        events = _turn_check(keys["ines"], relay, at=time.time())
    assert _kinds(events) == [("refused", "stale")]
