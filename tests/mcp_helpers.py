"""Driving ``muretai mcp --as NAME`` through the SDK's own stdio client, keeping every tool
result for the project's conventions lint."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.client.stdio import StdioServerParameters
from mcp.types import ElicitResult, ResourceUpdatedNotification

from muretai_cli.lint import lint_bytes
from tests.servers import ROOT


class Recorder:
    """Calls tools and keeps each result for the lint."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.results: list[dict[str, Any]] = []

    async def call(self, name: str, **args: Any) -> dict[str, Any]:
        got = await self.client.call_tool(name, args)
        assert not got.is_error, got.content  # a tool answers; it never fails as a call
        doc = got.structured_content
        assert isinstance(doc, dict)
        assert next(iter(doc)) == "ok", "ok comes first in every result"
        if doc["ok"] is False and not doc.get("needsHumanConfirmation"):
            assert doc["code"] and doc["message"] and doc["agentHint"], doc
        self.results.append(doc)
        return doc


def lint_clean(results: list[dict[str, Any]]) -> None:
    """Every result passes ``muretai conventions lint`` (no error finding)."""
    assert results
    for doc in results:
        report = lint_bytes(json.dumps(doc).encode())
        assert report.errors == 0, (doc, [f.to_json() for f in report.findings])


def server_params(name: str, *extra: str) -> StdioServerParameters:
    """How the SDK's stdio client starts the real ``muretai mcp --as NAME EXTRA`` process."""
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "muretai_cli", "mcp", "--as", name, *extra],
                                 cwd=str(ROOT), env=dict(os.environ))


class Updates:
    """A client's ``message_handler``: the ``notifications/resources/updated`` it is sent (the
    classic subscription's updates), in the order they come."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._came = anyio.Event()

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.uris.append(message.params.uri)
            self._came.set()
            self._came = anyio.Event()

    async def arrived(self, count: int, timeout: float = 30) -> list[str]:
        """The URIs updated so far, once ``count`` updates have arrived in all: awaited on
        the handler's event (no polling), failing after ``timeout`` seconds."""
        with anyio.fail_after(timeout):
            while len(self.uris) < count:
                await self._came.wait()
        return list(self.uris)


def serve(name: str, body: Callable[[Recorder], Awaitable[None]], *extra: str,
          elicit: Callable[..., Awaitable[ElicitResult]] | None = None
          ) -> list[dict[str, Any]]:
    """One session with the real server process for ``name`` (answering elicitations with
    ``elicit`` when given); its results, linted."""
    params = server_params(name, *extra)
    recorded: list[dict[str, Any]] = []

    async def main() -> None:
        kw: dict[str, Any] = {"elicitation_callback": elicit} if elicit else {}
        async with Client(params, read_timeout_seconds=60, **kw) as client:
            rec = Recorder(client)
            try:
                await body(rec)
            finally:
                recorded.extend(rec.results)

    anyio.run(main)
    lint_clean(recorded)
    return recorded
