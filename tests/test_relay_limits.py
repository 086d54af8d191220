"""What a stranger can take from a relay, and what is left for everyone else (issue 22 §3).

Each limit against a real relay (uvicorn on 127.0.0.1), at its documented number
(docs/relay.md, "Limits"), and each test fails when its limit is removed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from muretai_cli.seam import SigningKey
from tests.relay_helpers import LiveRelay, deposit_body, live_relay

NOW = time.time()


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[LiveRelay]:
    """A relay whose clock stands still: a bucket refills only when a test moves it."""
    with live_relay(tmp_path / "relay.sqlite3", clock=lambda: NOW) as live:
        yield live


def _send(client: httpx.Client, relay: LiveRelay, sender: SigningKey, to: SigningKey,
          text: str = "hi") -> int:
    answer = client.post(f"{relay.url}/send", content=json.dumps(
        deposit_body(sender, to, text)).encode(), headers={"content-type": "application/json"})
    return answer.status_code


def test_fresh_keys_flooding_a_mailbox_do_not_starve_a_correspondent(relay: LiveRelay) -> None:
    """~10 deposits/s from fresh keys use up bob's mailbox rate (600/min); alice, whom bob
    wrote to, still gets through, six times out of six; another stranger does not."""
    bob, alice = SigningKey.generate(), SigningKey.generate()
    with httpx.Client(timeout=30) as client:
        assert _send(client, relay, bob, alice, "hello alice") == 200  # bob writes first
        flood = [_send(client, relay, SigningKey.generate(), bob) for _ in range(610)]
        assert flood.count(200) == 600 and flood[-1] == 429  # the shared lane is used up
        assert [_send(client, relay, alice, bob, f"reply {i}") for i in range(6)] == [200] * 6
        assert _send(client, relay, SigningKey.generate(), bob) == 429
        # the lane is alice's only: she still has her own sender bound (60/min)
        assert [_send(client, relay, alice, bob) for _ in range(60)].count(429) > 0
