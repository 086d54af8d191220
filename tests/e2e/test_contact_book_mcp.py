"""The MCP server reads the contact book (issue 18 §1): `list_connections` gives each
contact's name and reach, `send_message {to}` takes the owner's name for a peer. The real
server over stdio, driven by the SDK's own client; a real door."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import new_identity, run, run_json
from tests.mcp_helpers import Recorder, serve
from tests.servers import running, start_serve

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

        async def body(rec: Recorder) -> None:
            for tool, args in (("list_connections", {}),
                               ("send_message", {"to": "corner-shop", "text": "by name"}),
                               ("send_message", {"to": "nobody", "text": "x"})):
                got.setdefault(tool, []).append(await rec.call(tool, **args))
        serve("me", body)
    listed = got["list_connections"][0]["connections"]
    assert [(c["did"], c["name"], c["reachedBy"]) for c in listed] == [
        (shop, "corner-shop", "door")]
    by_name, unknown = got["send_message"]
    assert by_name["ok"] is True and by_name["to"] == shop and by_name["toName"] == "corner-shop"
    assert by_name["state"] == "delivered", by_name
    assert unknown["ok"] is False and unknown["code"] == "unknown-name", unknown
