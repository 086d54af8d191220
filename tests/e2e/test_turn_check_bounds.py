"""A relay that never ends a drain (issue 22 §2): turn-check stops within its bounds
(``visit.turn.DRAIN_MAX_ROUNDS``, ``_BYTES``, ``_SECONDS``) and reports the relay as
misbehaving (``relay-misbehaving``, exit 1), keeping and showing what it received.

Before the bounds, a relay whose every answer said ``more: true`` kept a real turn-check
listening for ever (451 listens in 40 s), a refused row stored each time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from muretai_cli.artifacts.message import build_message_send, signed_message
from muretai_cli.errors import Refused
from muretai_cli.home import KeyStore, keys_dir
from muretai_cli.inbox.store import IdentityStore
from muretai_cli.net import SafeClient
from muretai_cli.seam import SigningKey, canonical_bytes, seal_box
from muretai_cli.visit import turn
from muretai_cli.visit.relay import RelayClient
from tests.cli_helpers import new_identity, run
from tests.servers import serve_asgi


class EndlessRelay:
    """Every listen answer says ``more: true``: with one fresh item (a good message first,
    then items without a blob), with none, or padded to ``pad`` bytes."""

    def __init__(self, me: SigningKey, *, items: bool = True, pad: int = 0) -> None:
        self.me = me
        self.items = items
        self.pad = pad
        self.listens = 0
        self.acked: list[str] = []

    def _first(self) -> dict[str, Any]:
        alice = SigningKey.generate()
        message = signed_message(alice, to=self.me.did, text="the one real message",
                                 now=int(time.time()), context_id="c-1")
        blob = seal_box(alice, self.me.enc_pub, canonical_bytes(build_message_send(message)),
                        ad=b"")
        return {"id": "d-0", "from": alice.did, "from_enc": alice.enc_pub, "blob": blob,
                "received": int(time.time())}

    async def on_listen(self, request: Request) -> Response:
        await request.body()
        self.listens += 1
        n = self.listens
        messages: list[dict[str, Any]] = []
        if self.items:
            messages = [self._first() if n == 1 else
                        {"id": f"d-{n}", "from": self.me.did, "from_enc": "ab" * 32}]
        body = json.dumps({"messages": messages, "more": True}).encode()
        return Response(body + b" " * self.pad, media_type="application/json")

    async def on_ack(self, request: Request) -> Response:
        ids = json.loads(await request.body())["ids"]
        self.acked.extend(ids)
        return Response(json.dumps({"acked": len(ids)}), media_type="application/json")

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/listen", self.on_listen, methods=["POST"]),
                                 Route("/ack", self.on_ack, methods=["POST"])])


def _me(url: str) -> SigningKey:
    new_identity("me")
    assert run("id", "relay", "me", url).exit_code == 0
    assert run("op", "--as", "me", "policy", "open").exit_code == 0
    return KeyStore(keys_dir()).load("me").signing_key()


def _turn_check_process() -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run([sys.executable, "-m", "muretai_cli", "op", "--as", "me",
                           "turn-check", "--json"], capture_output=True, timeout=120,
                          env=os.environ.copy(), check=False)
    return proc.returncode, json.loads(proc.stdout), proc.stderr.decode()


def test_a_relay_that_always_says_more_is_left_after_the_round_bound() -> None:
    me = SigningKey.generate()
    relay = EndlessRelay(me)
    with serve_asgi(relay.app()) as url:
        real = _me(url)
        relay.me = real
        code, doc, err = _turn_check_process()
    assert code == 1, err
    assert doc["ok"] is False and doc["error"]["code"] == "relay-misbehaving"
    assert relay.listens == turn.DRAIN_MAX_ROUNDS  # and not one more
    assert [m["text"] for m in doc["messages"]] == ["the one real message"]  # kept, shown
    assert len(doc["refused"]) == turn.DRAIN_MAX_ROUNDS - 1
    assert "relay-misbehaving" in err


def test_more_with_an_empty_answer_is_misbehaving_at_once() -> None:
    relay = EndlessRelay(SigningKey.generate(), items=False)
    with serve_asgi(relay.app()) as url:
        _me(url)
        code, doc, err = _turn_check_process()
    assert code == 1, err
    assert doc["error"]["code"] == "relay-misbehaving" and relay.listens == 1
    assert "no messages" in doc["error"]["message"]


def test_the_byte_bound_ends_a_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers of 1 MiB each against a bound of 3.5 MiB: the fourth answer ends it."""
    monkeypatch.setattr(turn, "DRAIN_MAX_BYTES", int(3.5 * 1024 * 1024))
    relay = EndlessRelay(SigningKey.generate(), pad=1024 * 1024)
    with serve_asgi(relay.app()) as url:
        relay.me = _me(url)
        result = run("op", "--as", "me", "turn-check", "--json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and doc["error"]["code"] == "relay-misbehaving"
    assert "bytes" in doc["error"]["message"] and relay.listens == 4


def test_the_time_bound_ends_a_drain(tmp_path: Path) -> None:
    """A drain's clock (its ``ticker``) passing ``DRAIN_MAX_SECONDS`` ends it: observed with
    an injected ticker, not by waiting."""
    me = SigningKey.generate()
    relay = EndlessRelay(me)
    ticks = iter(range(0, 10_000, 100))  # each look at the clock: 100 s later
    with serve_asgi(relay.app()) as url:
        store = IdentityStore(tmp_path / "me.sqlite3")
        try:
            client = RelayClient(url, lambda s, b: SafeClient(timeout=s, max_bytes=b))
            check = turn.TurnCheck(me, store, client, "open",
                                   ticker=lambda: float(next(ticks)))
            with pytest.raises(Refused) as refused:
                check.drain(0)
        finally:
            store.close()
    assert refused.value.code == "relay-misbehaving" and "s of draining" in refused.value.detail
    assert relay.listens == turn.DRAIN_MAX_SECONDS // 100
