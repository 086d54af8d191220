"""Issue 18 §1: the MCP ``wait_for_message {reply_to}`` waits for the reply to my message:
from the peer it went to, whatever else arrives; a messageId I never sent is refused."""

from __future__ import annotations

import anyio
import pytest

from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door
from tests.mcp_helpers import Recorder, serve

pytestmark = pytest.mark.slow


def test_wait_for_message_reply_to_is_the_reply_from_that_peer() -> None:
    new_identity("carol")
    with live_door("open", name="me") as mine, live_door("open", name="shop") as shop:
        def answers(mid: str) -> None:  # a stranger claims to answer it; then the peer does
            assert run("op", "--as", "carol", "dm", mine.did, "me too", "--reply-to", mid,
                       "--connect", mine.base).exit_code == 0
            assert run("op", "--as", "shop", "dm", mine.did, "unrelated", "--connect",
                       mine.base).exit_code == 0
            assert run("op", "--as", "shop", "dm", mine.did, "the answer", "--reply-to",
                       mid, "--connect", mine.base).exit_code == 0

        async def body(rec: Recorder) -> None:
            sent = await rec.call("send_message", to=shop.did, text="hello", url=shop.base)
            assert sent["ok"] and sent["receipt"]["verified"], sent
            unknown = await rec.call("wait_for_message", reply_to="m-never-sent", timeout=1)
            assert unknown["ok"] is False and unknown["code"] == "unknown-message"
            other = await rec.call("wait_for_message", reply_to=sent["messageId"],
                                   peer=mine.did, timeout=1)
            assert other["ok"] is False and other["code"] == "unknown-message"
            await anyio.to_thread.run_sync(answers, sent["messageId"])
            got = await rec.call("wait_for_message", reply_to=sent["messageId"], after=0,
                                 timeout=5)
            assert got["ok"] and got["timedOut"] is False, got
            assert [(e["from"], e["text"]) for e in got["entries"]] == [
                (shop.did, "the answer")]
        serve("me", body)  # each result: ok first, and lint-clean
