"""``muretai mcp --as NAME`` pushes ``muretai://inbox`` to a client of the released protocol
too (issue 18 §2 "Push"): it advertises ``resources.subscribe``; a client that calls
``resources/subscribe`` is sent ``notifications/resources/updated`` when a message is stored
(one per message, however often it subscribed); ``resources/unsubscribe`` stops them; no
other URI can be subscribed. Driven by the SDK's own stdio client in its handshake mode
(``mode="legacy"``), messages sent by a peer's ``op dm`` process to the identity's door."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    EmptyResult,
    SubscribeRequest,
    SubscribeRequestParams,
    UnsubscribeRequest,
    UnsubscribeRequestParams,
)

from tests.cli_helpers import muretai, new_identity
from tests.mcp_helpers import Updates, server_params
from tests.servers import running, start_serve

pytestmark = pytest.mark.slow

INBOX = "muretai://inbox"


@dataclass
class Door:
    did: str  # the identity the door and the MCP server act as ("shop")
    base: str


@pytest.fixture
def door(tmp_path: Path) -> Iterator[Door]:
    """``shop``'s door (open to strangers) and a peer ``me`` who can DM it."""
    shop = new_identity("shop")
    new_identity("me")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    with running(start_serve(tmp_path, "shop", "--dm-policy", "open", "--url", base,
                             "--port", str(port))):
        yield Door(shop, base)


def _classic(updates: Updates) -> Client:
    """A client of the released protocol: the initialize handshake, no listen stream."""
    return Client(server_params("shop"), mode="legacy", message_handler=updates,
                  read_timeout_seconds=60)


async def _subscribe(client: Client, uri: str) -> None:
    got = await client.session.send_request(
        SubscribeRequest(params=SubscribeRequestParams(uri=uri)), EmptyResult)
    assert isinstance(got, EmptyResult)


async def _unsubscribe(client: Client, uri: str) -> None:
    got = await client.session.send_request(
        UnsubscribeRequest(params=UnsubscribeRequestParams(uri=uri)), EmptyResult)
    assert isinstance(got, EmptyResult)


async def _dm(door: Door, text: str) -> None:
    """The peer's ``op dm`` (a process of its own), delivered: stored at the door."""
    proc = await anyio.to_thread.run_sync(lambda: muretai(
        "op", "--as", "me", "dm", door.did, text, "--card-url", door.base))
    assert proc.returncode == 0, proc.stderr


async def _read(client: Client, after: int) -> dict[str, Any]:
    got = await client.call_tool("read_inbox", {"after": after})
    doc = got.structured_content
    assert isinstance(doc, dict) and doc["ok"] is True, got.content
    return doc


async def _wait(client: Client, after: int) -> dict[str, Any]:
    """The entries after ``after``, waiting for one (the store's own condition)."""
    got = await client.call_tool("wait_for_message", {"after": after, "timeout": 30})
    doc = got.structured_content
    assert isinstance(doc, dict) and doc["ok"] is True and doc["entries"], got.content
    return doc


def test_a_classic_subscriber_is_told_when_a_message_is_stored(door: Door) -> None:
    updates = Updates()

    async def main() -> None:
        async with _classic(updates) as client:
            assert client.protocol_version == "2025-11-25"  # the handshake era, no listen
            caps = client.server_capabilities.resources
            assert caps is not None and caps.subscribe is True
            await _subscribe(client, INBOX)
            await _dm(door, "hello shop")
            assert await updates.arrived(1) == [INBOX]
            page = await _read(client, 0)
            assert [e["text"] for e in page["entries"]] == ["hello shop"]
            await _dm(door, "again")  # every message, not only the first
            assert await updates.arrived(2) == [INBOX, INBOX]
            page = await _read(client, page["latest"])
            assert [e["text"] for e in page["entries"]] == ["again"]

    anyio.run(main)


def test_one_update_per_message_and_none_after_unsubscribe(door: Door) -> None:
    updates = Updates()

    async def main() -> None:
        async with _classic(updates) as client:
            await _subscribe(client, INBOX)
            await _subscribe(client, INBOX)  # a second subscribe is the same subscription
            await _dm(door, "first")
            await updates.arrived(1)
            cursor = (await _read(client, 0))["latest"]
            await _unsubscribe(client, INBOX)
            await _dm(door, "second")
            page = await _wait(client, cursor)  # the later condition: it is readable
            assert [e["text"] for e in page["entries"]] == ["second"]
            # one update for "first" (not one per subscribe call), none for "second"
            assert updates.uris == [INBOX], updates.uris
            await _subscribe(client, INBOX)  # subscribing again: updates again
            await _dm(door, "third")
            await updates.arrived(2)
            page = await _read(client, page["latest"])
            assert [e["text"] for e in page["entries"]] == ["third"]

    anyio.run(main)


def test_only_the_inbox_can_be_subscribed() -> None:
    new_identity("shop")
    updates = Updates()

    async def main() -> None:
        async with _classic(updates) as client:
            for call in (_subscribe, _unsubscribe):
                for uri in ("muretai://outbox", "file:///etc/passwd", "muretai://inbox/"):
                    with pytest.raises(MCPError) as refused:
                        await call(client, uri)
                    assert refused.value.error.code == INVALID_PARAMS, refused.value.error
                    assert refused.value.error.data == {"uri": uri}
                    assert INBOX in refused.value.error.message
            await _subscribe(client, INBOX)  # the session goes on; the inbox can be
            await _unsubscribe(client, INBOX)
            got = await client.call_tool("whoami", {})
            assert isinstance(got.structured_content, dict)
            assert got.structured_content["ok"] is True, got.structured_content

    anyio.run(main)
