"""``muretai mcp --as NAME`` holds the listener while a client is connected (issue 18 §2
"Push"): it drains the identity's relay into the store and tells the client through
``muretai://inbox`` updates; a second server for the same identity only reads and says
so; a client gone leaves every message to the next reader. Driven by the SDK's own
stdio client against a real relay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity
from tests.relay_helpers import LiveRelay, live_relay, relay_identities, signed_deposit
from tests.servers import ROOT

pytestmark = pytest.mark.slow

INBOX = "muretai://inbox"


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[LiveRelay]:
    with live_relay(tmp_path / "relay.sqlite3") as live:
        yield live


def _bob(relay: LiveRelay) -> SigningKey:
    return relay_identities(relay, "bob", publish=False, policy="open")["bob"]


def _client(name: str) -> Client:
    return Client(StdioServerParameters(command=sys.executable,
                                        args=["-m", "muretai_cli", "mcp", "--as", name],
                                        cwd=str(ROOT), env=dict(os.environ)),
                  read_timeout_seconds=60)


async def _call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    got = await client.call_tool(tool, args)
    doc = got.structured_content
    assert isinstance(doc, dict) and doc["ok"] is True, got.content
    return doc


def test_mail_through_the_relay_is_pushed_and_a_second_server_only_reads(
        relay: LiveRelay) -> None:
    from muretai_cli.home import listener_state

    bob = _bob(relay)
    alice = SigningKey.generate()
    sent: list[str] = []

    async def main() -> None:
        async with _client("bob") as first:
            assert (await _call(first, "whoami"))["listener"] == "held"
            async with _client("bob") as second:
                assert (await _call(second, "whoami"))["listener"] == "elsewhere"
            async with first.listen(resource_subscriptions=[INBOX]) as events:
                sent.append(await anyio.to_thread.run_sync(
                    signed_deposit, relay, alice, bob, "pushed"))
                with anyio.fail_after(30):  # the condition: an update for the inbox
                    async for event in events:
                        if getattr(event, "uri", None) == INBOX:
                            break
            page = await _call(first, "read_inbox", after=0)
            assert [e["text"] for e in page["entries"]] == ["pushed"]
            resource = await first.read_resource(INBOX)
            body = json.loads(resource.contents[0].text)  # type: ignore[union-attr]
            assert body["latest"] == page["latest"] and body["listener"] == "held"

    anyio.run(main)
    assert listener_state(bob.did) == "none"  # freed with the server
    # the server stored and acknowledged, but claimed nothing: turn-check shows it once
    proc = subprocess.run([sys.executable, "-m", "muretai_cli", "op", "--as", "bob",
                           "turn-check", "--json"], capture_output=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [m["messageId"] for m in doc["messages"]] == sent


def test_a_door_post_is_pushed_too(tmp_path: Path) -> None:
    import socket

    from muretai_cli.home import KeyStore, keys_dir
    from tests.servers import running, start_serve

    new_identity("me")
    new_identity("shop")
    shop = KeyStore(keys_dir()).load("shop").did
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    door = start_serve(tmp_path, "shop", "--dm-policy", "open", "--url",
                       f"http://127.0.0.1:{port}", "--port", str(port))

    async def main(base: str) -> None:
        async with _client("shop") as owner:
            assert (await _call(owner, "whoami"))["listener"] == "held"  # no relay: no drain
            async with owner.listen(resource_subscriptions=[INBOX]) as events:
                async with _client("me") as visitor:
                    sent = await _call(visitor, "send_message", to=shop, text="by the door",
                                       url=base)
                    assert sent["state"] == "delivered", sent
                with anyio.fail_after(30):  # the condition: an update for the inbox
                    async for event in events:
                        if getattr(event, "uri", None) == INBOX:
                            break
            page = await _call(owner, "read_inbox", after=0)
            assert [e["text"] for e in page["entries"]] == ["by the door"]

    with running(door.wait_ready()) as d:
        anyio.run(main, d.base)


def test_a_client_gone_mid_wait_loses_nothing_and_leaves_nothing_claimed(
        relay: LiveRelay) -> None:
    from muretai_cli.home import listener_state
    from tests.waiting import wait_until

    bob = _bob(relay)
    alice = SigningKey.generate()
    first = signed_deposit(relay, alice, bob, "before")

    async def main() -> None:
        async with _client("bob") as client:
            page = await _call(client, "wait_for_message", after=0, timeout=30)
            assert [e["text"] for e in page["entries"]] == ["before"]  # drained, stored
            with anyio.move_on_after(1):  # the client goes away mid-wait
                await client.call_tool("wait_for_message", {"after": page["latest"],
                                                            "timeout": 30})

    anyio.run(main)
    wait_until(lambda: listener_state(bob.did) == "none", "the server freed the listener",
               timeout=30)
    second = signed_deposit(relay, alice, bob, "after")
    proc = subprocess.run([sys.executable, "-m", "muretai_cli", "op", "--as", "bob",
                           "turn-check", "--json"], capture_output=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [m["messageId"] for m in doc["messages"]] == [first, second]
    assert "interrupted" not in doc
