"""Issue 18 §1: receipts are not answers, at a real door.

A muretai door with nobody answering signs its automatic receipt (``receipt`` in ``op dm``'s
text, JSON and the MCP ``send_message`` result, state delivered, ``reply`` null); with
``--on-message`` the program's answer is the ``reply``.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from muretai_cli.door.respond import OnMessage
from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door
from tests.servers import ROOT, running, start_serve

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
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from muretai_cli.home import KeyStore, keys_dir
    from muretai_cli.lint import lint_bytes

    new_identity("me")
    new_identity("shop")
    new_identity("desk")
    keys = KeyStore(keys_dir(None))
    plain = start_serve(tmp_path, "shop", "--dm-policy", "open", *_own_url())
    answering = start_serve(tmp_path, "desk", "--dm-policy", "open", "--on-message",
                            _cmd(tmp_path), *_own_url())
    results: list[dict[str, Any]] = []
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "muretai_cli", "mcp", "--as", "me"],
                                   cwd=str(ROOT), env=dict(os.environ))

    async def main(shop: str, desk: str) -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            for name, url in (("shop", shop), ("desk", desk)):
                got = await client.call_tool("send_message", {
                    "to": keys.load(name).did, "text": "hello", "url": url})
                assert isinstance(got.structured_content, dict), got.content
                results.append(got.structured_content)

    with running(plain) as shop, running(answering) as desk:
        anyio.run(main, shop.base, desk.base)
    receipt, reply = results
    assert receipt["ok"], receipt
    assert receipt["ok"] and receipt["state"] == "delivered" and receipt["reply"] is None
    assert receipt["receipt"]["verified"] and receipt["receipt"]["boundTo"] == "message"
    assert reply["ok"] and reply["state"] == "delivered" and reply["receipt"] is None
    assert reply["reply"]["verified"] and reply["reply"]["text"] == "you said: hello"
    for doc in results:
        assert next(iter(doc)) == "ok"
        assert lint_bytes(json.dumps(doc).encode()).errors == 0
