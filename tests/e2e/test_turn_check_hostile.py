"""turn-check against a relay that lies (a real starlette app on loopback): answers that are
not JSON or too large, items with missing fields, blobs that open to a message signed by
someone other than the depositor, addressed to someone else, or not message/send. Each is
refused and reported, nothing is shown as verified, and the drain goes on. And a second
turn-check supersedes the first (exit 4)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from muretai_cli.artifacts.message import build_message_send, signed_message
from muretai_cli.home import KeyStore, keys_dir
from muretai_cli.seam import SigningKey, canonical_bytes, seal_box
from tests.cli_helpers import new_identity, run
from tests.servers import serve_asgi
from tests.waiting import wait_until


class LyingRelay:
    def __init__(self) -> None:
        self.listen: Any = {"messages": [], "more": False}
        self.acked: list[str] = []

    async def on_listen(self, request: Request) -> Response:
        await request.body()
        answer, self.listen = self.listen, {"messages": [], "more": False}
        if isinstance(answer, bytes):
            return Response(answer, media_type="application/json")
        return JSONResponse(answer)

    async def on_ack(self, request: Request) -> Response:
        self.acked.extend(json.loads(await request.body())["ids"])
        return JSONResponse({"acked": 1})

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/listen", self.on_listen, methods=["POST"]),
                                 Route("/ack", self.on_ack, methods=["POST"])])


def deposit(sender: SigningKey, me: SigningKey, dep_id: str, *, signer: SigningKey | None = None,
            to: str | None = None, method: str = "message/send",
            text: str = "hello") -> dict[str, Any]:
    message = signed_message(signer or sender, to=to or me.did, text=text,
                             now=int(time.time()), context_id="c-1")
    request = build_message_send(message)
    request["method"] = method
    blob = seal_box(sender, me.enc_pub, canonical_bytes(request), ad=b"")
    return {"id": dep_id, "from": sender.did, "from_enc": sender.enc_pub, "blob": blob,
            "received": int(time.time())}


def turn(*extra: str) -> tuple[int, dict[str, Any]]:
    out = run("op", "--as", "me", "turn-check", *extra, "--json")
    return out.exit_code, json.loads(out.stdout)


def test_lies_are_refused_reported_and_the_drain_goes_on() -> None:
    lying = LyingRelay()
    with serve_asgi(lying.app()) as url:
        new_identity("me")
        assert run("id", "relay", "me", url).exit_code == 0
        assert run("op", "--as", "me", "policy", "open").exit_code == 0
        me = KeyStore(keys_dir()).load("me").signing_key()
        alice, mallory = SigningKey.generate(), SigningKey.generate()
        good = deposit(alice, me, "d-good", text="the real one")
        lying.listen = {"more": False, "messages": [
            {k: v for k, v in deposit(alice, me, "d-noblob").items() if k != "blob"},
            deposit(alice, me, "d-forged", signer=mallory),
            deposit(alice, me, "d-other", to=mallory.did),
            deposit(alice, me, "d-method", method="contact/redeem"),
            {**deposit(alice, me, "d-box"), "from_enc": mallory.enc_pub},
            good,
        ]}
        code, doc = turn()
        assert code == 0, doc
        assert [m["text"] for m in doc["messages"]] == ["the real one"]
        assert doc["messages"][0]["verified"] and doc["messages"][0]["from"] == alice.did
        assert [(r["depositId"], r["reason"]["code"]) for r in doc["refused"]] == [
            ("d-noblob", "missing-blob"), ("d-forged", "signer-not-depositor"),
            ("d-other", "wrong-recipient"), ("d-method", "not-message-send"),
            ("d-box", "cannot-open")]
        assert sorted(lying.acked) == sorted(["d-noblob", "d-forged", "d-other", "d-method",
                                              "d-box", "d-good"])
        # redelivered after the ack was lost: recognised, not shown twice
        lying.listen = {"more": False, "messages": [good]}
        code, doc = turn()
        assert code == 0 and doc["messages"] == doc["held"] == doc["refused"] == []
        # an answer that is not JSON, or too large: refused, exit 1, nothing shown
        lying.listen = b"<html>not json</html>"
        code, doc = turn()
        assert code == 1 and doc["ok"] is False and doc["messages"] == []
        assert doc["error"]["code"] == "relay-malformed"
        lying.listen = b'{"messages": [' + b'"x",' * (3 * 1024 * 1024) + b'"x"]}'
        code, doc = turn()
        assert code == 1 and doc["error"]["code"] == "too-large"
        human = run("op", "--as", "me", "turn-check")
        assert human.exit_code == 0 and "no new messages" in human.stderr


@pytest.mark.slow
def test_a_second_turn_check_supersedes_the_first(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    from tests.relay_helpers import live_relay

    with live_relay(tmp_path / "relay.sqlite3") as relay:
        new_identity("me")
        assert run("id", "relay", "me", relay.url).exit_code == 0
        me = KeyStore(keys_dir()).load("me").did
        # the first turn-check is its own process, holding a long-poll
        first = subprocess.Popen([sys.executable, "-m", "muretai_cli", "op", "--as", "me",
                                  "turn-check", "--wait", "25", "--json"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env={**os.environ})
        try:
            wait_until(lambda: relay.relay.store.epoch(me) is not None,
                       "the first listener has claimed its epoch", timeout=30)
            # On this machine a second turn-check reads beside the holder (the listener
            # lease); from another machine (another home holding the same key) it takes the
            # relay's listener, and the first one is told it was superseded.
            import shutil

            from muretai_cli.home import home_dir

            elsewhere = tmp_path / "elsewhere"
            shutil.copytree(home_dir(), elsewhere)
            second = subprocess.run([sys.executable, "-m", "muretai_cli", "op", "--as", "me",
                                     "turn-check", "--json"], capture_output=True, timeout=60, check=False,
                                    env={**os.environ, "MURETAI_HOME": str(elsewhere)})
            assert second.returncode == 0, second.stdout
            out, err = first.communicate(timeout=40)
        finally:
            if first.poll() is None:
                first.kill()
        assert first.returncode == 1, (out, err)  # local: not the peer refusing (exit 4)
        assert json.loads(out)["error"] == "superseded"


def test_a_nul_character_is_refused_and_the_drain_goes_on_on_postgresql(pg_url: str) -> None:
    """PostgreSQL cannot store a NUL in a text: without the ladder's rule such a deposit
    raised from the store, was never acknowledged, and stopped every later turn-check."""
    lying = LyingRelay()
    with serve_asgi(lying.app()) as url:
        new_identity("me")
        assert run("id", "relay", "me", url).exit_code == 0
        assert run("db", "init", "--as", "me", "--db", pg_url).exit_code == 0
        assert run("op", "--as", "me", "policy", "open", "--db", pg_url).exit_code == 0
        me = KeyStore(keys_dir()).load("me").signing_key()
        alice = SigningKey.generate()
        lying.listen = {"more": False, "messages": [
            deposit(alice, me, "d-nul", text="a \u0000 inside"),
            deposit(alice, me, "d-next", text="the next one")]}
        code, doc = turn("--db", pg_url)
        assert code == 0, doc
        assert [m["text"] for m in doc["messages"]] == ["the next one"]
        assert [(r["depositId"], r["reason"]["code"]) for r in doc["refused"]] == [
            ("d-nul", "nul-character")]
        assert sorted(lying.acked) == ["d-next", "d-nul"]
