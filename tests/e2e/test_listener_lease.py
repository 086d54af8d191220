"""One process per identity holds the relay listener (issue 18 §1): a one-shot turn-check
beside a follower reads what was stored and never takes the mailbox; a killed follower
frees the lease and loses nothing. Real turn-check processes, a real relay."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from muretai_cli.seam import SigningKey
from tests.relay_helpers import LiveRelay, live_relay, relay_identities, signed_deposit
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # real processes: seconds each


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[LiveRelay]:
    with live_relay(tmp_path / "relay.sqlite3") as live:
        yield live


def _bob(relay: LiveRelay) -> SigningKey:
    return relay_identities(relay, "bob", publish=False, policy="open")["bob"]


def _turn_check(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "muretai_cli", "op", "--as", "bob",
                             "turn-check", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, **(env or {})})


def _once(*args: str) -> tuple[int, dict[str, Any], str]:
    proc = _turn_check("--json", *args)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, json.loads(out), err.decode()


def _line(stream: IO[bytes] | None) -> dict[str, Any]:
    assert stream is not None
    line = stream.readline()
    assert line, "the follower stopped"
    doc: dict[str, Any] = json.loads(line)
    return doc


def _listening(relay: LiveRelay, bob: SigningKey, proc: subprocess.Popen[bytes]) -> int:
    """The follower's epoch at the relay, once it listens."""
    wait_until(lambda: relay.relay.store.epoch(bob.did) is not None or proc.poll() is not None,
               "the follower listens", timeout=60)
    assert proc.poll() is None, proc.communicate()
    epoch = relay.relay.store.epoch(bob.did)
    assert epoch is not None
    return epoch


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=30)


def test_a_one_shot_beside_a_follower_reads_and_does_not_supersede_it(
        relay: LiveRelay) -> None:
    bob = _bob(relay)
    alice = SigningKey.generate()
    follower = _turn_check("--follow", "--json")
    try:
        epoch = _listening(relay, bob, follower)
        signed_deposit(relay, alice, bob, "first")
        assert _line(follower.stdout)["text"] == "first"
        code, doc, err = _once()
        assert code == 0 and doc["ok"] is True, err
        assert doc["messages"] == []  # the follower showed it: nothing is printed twice
        signed_deposit(relay, alice, bob, "second")
        assert _line(follower.stdout)["text"] == "second"  # still the listener
        assert follower.poll() is None
        assert relay.relay.store.epoch(bob.did) == epoch  # the relay was never asked
        assert "holds bob's relay listener" in err
    finally:
        _stop(follower)
    assert follower.returncode not in (1, 4)  # killed by the test, not superseded


def test_a_one_shot_shows_what_the_holder_stored_and_leaves_the_relay_alone(
        relay: LiveRelay) -> None:
    from muretai_cli.home import hold_listener, listener_state
    from muretai_cli.inbox.consent import policy_of
    from muretai_cli.inbox.store import open_identity_store
    from muretai_cli.net import SafeClient
    from muretai_cli.visit.relay import RelayClient
    from muretai_cli.visit.turn import TurnCheck

    bob = _bob(relay)
    alice = SigningKey.generate()
    signed_deposit(relay, alice, bob, "stored by the holder")
    lease = hold_listener(bob.did)  # this test process is the holder (as `muretai mcp` is)
    assert lease is not None and listener_state(bob.did) == "held"
    try:
        store = open_identity_store(bob.did)
        try:
            client = RelayClient(relay.url, lambda s, b: SafeClient(timeout=s, max_bytes=b))
            assert TurnCheck(bob, store, client, policy_of(store)).drain(0) == 1
        finally:
            store.close()
        signed_deposit(relay, alice, bob, "still at the relay")
        code, doc, err = _once()
        assert code == 0, err
        assert [m["text"] for m in doc["messages"]] == ["stored by the holder"]
        assert "holds bob's relay listener" in err
        follower = _turn_check("--follow")  # a second listener is refused, exit 1
        _, ferr = follower.communicate(timeout=60)
        assert follower.returncode == 1 and b"listener-held" in ferr
    finally:
        lease.release()
    assert listener_state(bob.did) == "none"
    code, doc, err = _once()
    assert code == 0 and "holds" not in err
    assert [m["text"] for m in doc["messages"]] == ["still at the relay"]


def test_a_one_shot_wait_beside_a_holder_is_woken_by_its_commit(relay: LiveRelay) -> None:
    from muretai_cli.home import hold_listener
    from muretai_cli.inbox.consent import policy_of
    from muretai_cli.inbox.store import open_identity_store
    from muretai_cli.net import SafeClient
    from muretai_cli.visit.relay import RelayClient
    from muretai_cli.visit.turn import TurnCheck

    bob = _bob(relay)
    alice = SigningKey.generate()
    lease = hold_listener(bob.did)
    assert lease is not None
    try:
        waiting = _turn_check("--json", "--wait", "30")
        assert waiting.stderr is not None
        assert b"holds bob's relay listener" in waiting.stderr.readline()  # it is waiting
        signed_deposit(relay, alice, bob, "while you waited")
        store = open_identity_store(bob.did)
        try:
            client = RelayClient(relay.url, lambda s, b: SafeClient(timeout=s, max_bytes=b))
            assert TurnCheck(bob, store, client, policy_of(store)).drain(0) == 1
        finally:
            store.close()
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0, err
        assert [m["text"] for m in json.loads(out)["messages"]] == ["while you waited"]
    finally:
        lease.release()


def test_a_killed_follower_frees_the_listener_and_loses_nothing(relay: LiveRelay) -> None:
    from muretai_cli.home import listener_state

    bob = _bob(relay)
    alice = SigningKey.generate()
    for text in ("one", "two", "three"):
        signed_deposit(relay, alice, bob, text)
    # killed after the drain committed, before the relay was told (kill -9: no cleanup)
    follower = _turn_check("--follow", "--json", env={"MURETAI_TEST_KILL_AT": "committed"})
    follower.communicate(timeout=60)
    assert follower.returncode == -signal.SIGKILL
    assert listener_state(bob.did) == "none"  # the OS freed the lease with the process
    signed_deposit(relay, alice, bob, "four")
    code, doc, err = _once()
    assert code == 0 and "holds" not in err, err
    assert sorted(m["text"] for m in doc["messages"]) == ["four", "one", "three", "two"]
    code, doc, err = _once()
    assert code == 0 and doc["messages"] == [], err  # once, never again
