"""Issue 8 §4: a deposit whose answer is lost is retried, at most 3 times, with the same id
and blob; the relay (a real one) stores it once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from muretai_cli.errors import Unreachable
from muretai_cli.net import SafeClient
from muretai_cli.seam import SigningKey, seal_box
from muretai_cli.visit.relay import DEPOSIT_ATTEMPTS, RelayClient
from tests.relay_helpers import LiveRelay, live_relay


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[LiveRelay]:
    with live_relay(tmp_path / "relay.sqlite3") as live:
        yield live


class LosesAnswers(httpx.BaseTransport):
    """Forwards every request to the real relay, then loses the first ``lose`` answers (the
    deposit arrived; the client sees a reset)."""

    def __init__(self, lose: int) -> None:
        self.lose = lose
        self.bodies: list[bytes] = []
        self._real = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        self.bodies.append(body)
        response = self._real.handle_request(request)
        response.read()
        if len(self.bodies) <= self.lose:
            raise httpx.ReadError("connection reset by peer", request=request)
        return response


def _deposit(relay: LiveRelay, transport: LosesAnswers) -> dict[str, object]:
    alice, bob = SigningKey.generate(), SigningKey.generate()
    client = RelayClient(relay.url, lambda seconds, size: SafeClient(
        timeout=seconds, max_bytes=size, transport=transport))
    blob = seal_box(alice, bob.enc_pub, b"hello", ad=b"")
    try:
        return client.deposit(alice, to=bob.did, blob=blob)
    finally:
        waiting = relay.listen(bob).json()["messages"]
        assert len(waiting) == 1  # stored once, however often it was sent
        assert {json.loads(b)["id"] for b in transport.bodies} == {waiting[0]["id"]}
        assert {json.loads(b)["blob"] for b in transport.bodies} == {blob}


def test_a_lost_answer_is_retried_with_the_same_id_and_blob(relay: LiveRelay) -> None:
    transport = LosesAnswers(lose=2)
    report = _deposit(relay, transport)
    assert report["attempts"] == 3 and report["duplicate"] is True
    assert len(set(transport.bodies)) == 1  # byte-identical


def test_retries_stop_after_three(relay: LiveRelay) -> None:
    transport = LosesAnswers(lose=99)
    with pytest.raises(Unreachable):
        _deposit(relay, transport)
    assert len(transport.bodies) == DEPOSIT_ATTEMPTS == 4
