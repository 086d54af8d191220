"""Issue 18 §1: receipts are not answers, at a real door.

A muretai door with nobody answering signs its automatic receipt (``receipt`` in ``op dm``'s
text, JSON and the MCP ``send_message`` result, state delivered, ``reply`` null); with
``--on-message`` the program's answer is the ``reply``.
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.door.respond import OnMessage
from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door
from tests.servers import running, start_serve

ANSWER = "import json, sys\nprint('you said: ' + json.load(sys.stdin)['text'])\n"


def _cmd(tmp: Path) -> str:
    script = tmp / "answer.py"
    script.write_text(ANSWER)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def _dm(did: str, base: str, *extra: str) -> tuple[int, dict[str, Any]]:
    out = run("op", "--as", "vis", "dm", did, "hello", "--connect", base, *extra, "--json")
    return out.exit_code, json.loads(out.stdout)


def test_a_doors_automatic_receipt_is_reported_as_a_receipt() -> None:
    new_identity("vis")
    with live_door("open") as door:
        code, doc = _dm(door.did, door.base)
        assert code == 0 and doc["state"] == "delivered", doc
        assert doc["reply"] is None
        assert doc["receipt"]["verified"] and doc["receipt"]["boundTo"] == "message"
        assert doc["receipt"]["text"] == "accepted: delivered to door's inbox"
        human = run("op", "--as", "vis", "dm", door.did, "again")
        assert human.exit_code == 0, human.stderr
        assert human.stdout.startswith(f"receipt from {door.did} (verified, bound to this "
                                       "message): delivered, no reply yet")
        assert "reply from" not in human.stdout


def test_an_on_message_answer_is_reported_as_the_reply(tmp_path: Path) -> None:
    new_identity("vis")
    with live_door("open", on_message=OnMessage(_cmd(tmp_path), timeout=10)) as door:
        code, doc = _dm(door.did, door.base)
        assert code == 0 and doc["state"] == "delivered", doc
        assert doc["receipt"] is None
        assert doc["reply"]["verified"] and doc["reply"]["text"] == "you said: hello"
        human = run("op", "--as", "vis", "dm", door.did, "again")
        assert human.stdout.startswith(f"reply from {door.did} (verified, bound to this "
                                       "message)")
        assert "  | you said: again" in human.stdout and "receipt" not in human.stdout


def _own_url() -> tuple[str, ...]:
    """``--url`` and ``--port`` of a free loopback port: the card names where it listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return "--url", f"http://127.0.0.1:{port}", "--port", str(port)


@pytest.mark.slow
def test_mcp_send_message_tells_a_receipt_from_a_reply(tmp_path: Path) -> None:
    from muretai_cli.home import KeyStore, keys_dir
    from tests.mcp_helpers import Recorder, serve

    new_identity("me")
    new_identity("shop")
    new_identity("desk")
    keys = KeyStore(keys_dir(None))
    plain = start_serve(tmp_path, "shop", "--dm-policy", "open", *_own_url())
    answering = start_serve(tmp_path, "desk", "--dm-policy", "open", "--on-message",
                            _cmd(tmp_path), *_own_url())
    with running(plain) as shop, running(answering) as desk:
        async def body(rec: Recorder) -> None:
            for name, url in (("shop", shop.base), ("desk", desk.base)):
                await rec.call("send_message", to=keys.load(name).did, text="hello", url=url)
        results = serve("me", body)  # each result: ok first, and lint-clean
    receipt, reply = results
    assert receipt["ok"], receipt
    assert receipt["ok"] and receipt["state"] == "delivered" and receipt["reply"] is None
    assert receipt["receipt"]["verified"] and receipt["receipt"]["boundTo"] == "message"
    assert reply["ok"] and reply["state"] == "delivered" and reply["receipt"] is None
    assert reply["reply"]["verified"] and reply["reply"]["text"] == "you said: hello"
