"""A listener's epoch is bound by what its owner signed (issue 22 §1).

The seam's listen token signs ``did``, ``minute`` and the origin, not the epoch. Before the
bound, one replay of a copied token with ``"epoch": 2**63-1`` made every later turn-check of
that DID ``superseded``, for ever (the relay keeps the newest epoch in its store). Now an
epoch must lie before the end of the token's minute (``epoch-ahead`` otherwise), and a
stored epoch no token valid now could carry is void: the owner's next turn-check takes the
mailbox back. Each attack runs against a real relay (uvicorn on 127.0.0.1, SQLite and
PostgreSQL) and a real ``muretai op turn-check`` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from muretai_cli.relay.limits import epoch_end
from muretai_cli.relay.store import RelayStore
from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run
from tests.relay_helpers import LiveRelay, listen_body, live_relay
from tests.servers import wait_until

POISON = 2**63 - 1


def _bob(relay: LiveRelay) -> SigningKey:
    from muretai_cli.home import KeyStore, keys_dir

    new_identity("bob")
    assert run("id", "relay", "bob", relay.url).exit_code == 0
    assert run("op", "--as", "bob", "policy", "open").exit_code == 0
    return KeyStore(keys_dir()).load("bob").signing_key()


def _turn_check() -> tuple[int, dict[str, object], str]:
    """A real ``op --as bob turn-check --json`` process."""
    proc = subprocess.run([sys.executable, "-m", "muretai_cli", "op", "--as", "bob",
                           "turn-check", "--json"], capture_output=True, env=os.environ.copy(),
                          timeout=60, check=False)
    return proc.returncode, json.loads(proc.stdout), proc.stderr.decode()


def _send(relay: LiveRelay, bob: SigningKey, text: str) -> None:
    """alice (a real identity) writes to bob through the relay."""
    assert run("card", "publish", "--as", "bob").exit_code == 0
    if run("id", "show", "alice").exit_code != 0:
        new_identity("alice")
    result = run("op", "--as", "alice", "dm", bob.did, text, "--relay", relay.url)
    assert result.exit_code == 0, result.output


def test_a_replayed_token_with_a_huge_epoch_is_refused(backend: str) -> None:
    with live_relay(backend) as relay:
        bob = _bob(relay)
        # what an eavesdropper does with a copied token: the same did, minute and token
        copied = listen_body(bob, relay.origin, epoch=POISON, wait=0)
        answer = relay.post("listen", copied)
        assert answer.status_code == 400 and answer.json()["error"] == "epoch-ahead"
        end = epoch_end(copied["minute"])  # the first epoch the token's minute does not allow
        assert relay.post("listen", {**copied, "epoch": end}).json()["error"] == "epoch-ahead"
        assert relay.relay.store.epoch(bob.did) is None
        _send(relay, bob, "still mine")
        code, doc, err = _turn_check()
        assert code == 0, err
        assert [m["text"] for m in doc["messages"]] == ["still mine"]  # type: ignore[attr-defined]


def _poison(backend: str, did: str) -> None:
    """The row a relay kept before the bound, after one replay with epoch 2**63-1."""
    store = RelayStore.open(backend)
    try:
        assert store.claim_epoch(did, POISON) == "newer"
    finally:
        store.close()


def test_a_poisoned_epoch_kept_from_before_is_void_across_restarts(backend: str) -> None:
    """A relay that ran before the bound may hold 2**63-1 for a DID in its store: the owner
    is not locked out by it, whichever run of the relay finds it."""
    bob: SigningKey | None = None
    for run_number in range(2):  # a relay, then the same store under a restarted relay
        with live_relay(backend) as relay:
            bob = bob or _bob(relay)
            assert run("id", "relay", "bob", relay.url).exit_code == 0
            _poison(backend, bob.did)
            _send(relay, bob, f"after the poison {run_number}")
            code, doc, err = _turn_check()
            assert code == 0, err
            assert [m["text"] for m in doc["messages"]] == [  # type: ignore[attr-defined]
                f"after the poison {run_number}"]
            assert relay.relay.store.epoch(bob.did) != POISON


def test_a_copied_token_holds_the_mailbox_no_longer_than_its_minute(tmp_path: Path) -> None:
    """The most a copied token can do: take the DID over until its signed minute ends. A
    token of the minute before (still within the relay's ±1) can no longer lock the owner
    out now."""
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        bob = _bob(relay)
        wait_until(lambda: 2 < time.time() % 60 < 55, "not at a minute's edge")
        minute = int(time.time() // 60) - 1
        copied = listen_body(bob, relay.origin, epoch=epoch_end(minute) - 1, minute=minute)
        assert relay.post("listen", {**copied, "epoch": epoch_end(minute) + 60_000_000}
                          ).json()["error"] == "epoch-ahead"  # not even into this minute
        assert relay.post("listen", {**copied, "wait": 0}).status_code == 200
        _send(relay, bob, "back to me")
        code, doc, err = _turn_check()
        assert code == 0, err
        assert [m["text"] for m in doc["messages"]] == ["back to me"]  # type: ignore[attr-defined]


def test_a_void_epoch_is_taken_over_on_each_backend(backend: str) -> None:
    store = RelayStore.open(backend)
    did = SigningKey.generate().did
    try:
        assert store.claim_epoch(did, 100) == "newer"
        assert store.claim_epoch(did, 50, void_from=200) == "superseded"
        assert store.claim_epoch(did, POISON) == "newer"
        assert store.claim_epoch(did, 50, void_from=200) == "newer"  # the poison holds nothing
        assert store.epoch(did) == 50
        assert store.claim_epoch(did, 40, void_from=50) == "newer"  # at void_from: void too
    finally:
        store.close()
