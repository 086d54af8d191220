"""The MCP server reads the contact book (issue 18 §1): `list_connections` gives each
contact's name and reach, `send_message {to}` takes the owner's name for a peer. The real
server over stdio, driven by the SDK's own client; a real door."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.cli_helpers import new_identity, run, run_json
from tests.servers import ROOT, running, start_serve

pytestmark = pytest.mark.slow


def test_send_message_takes_a_name_and_list_connections_shows_it(tmp_path: Path) -> None:
    new_identity("me")
    shop = new_identity("shop")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = start_serve(tmp_path, "shop", "--dm-policy", "open", "--url",
                       f"http://127.0.0.1:{port}", "--port", str(port))
    with running(proc.wait_ready()) as door:
        code, sent = run_json("op", "--as", "me", "dm", shop, "first", "--connect", door.base)
        assert code == 0 and sent["state"] == "delivered", sent
        assert run("op", "--as", "me", "contact", "name", shop, "corner-shop").exit_code == 0
        got: dict[str, Any] = {}

        async def main() -> None:
            params = StdioServerParameters(command=sys.executable,
                                           args=["-m", "muretai_cli", "mcp", "--as", "me"],
                                           cwd=str(ROOT), env=dict(os.environ))
            async with Client(params, read_timeout_seconds=60) as client:
                for tool, args in (("list_connections", {}),
                                   ("send_message", {"to": "corner-shop", "text": "by name"}),
                                   ("send_message", {"to": "nobody", "text": "x"})):
                    result = await client.call_tool(tool, args)
                    assert isinstance(result.structured_content, dict)
                    got.setdefault(tool, []).append(result.structured_content)

        anyio.run(main)
    listed = got["list_connections"][0]["connections"]
    assert [(c["did"], c["name"], c["reachedBy"]) for c in listed] == [
        (shop, "corner-shop", "door")]
    by_name, unknown = got["send_message"]
    assert by_name["ok"] is True and by_name["to"] == shop and by_name["toName"] == "corner-shop"
    assert by_name["state"] == "delivered", by_name
    assert unknown["ok"] is False and unknown["code"] == "unknown-name", unknown
