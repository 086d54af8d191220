"""An MCP client session over stdio, through the SDK's own client, for code that is not
async (the demo's agent part): each tool call blocks until its result, or runs in the
background (``call_soon``) while the caller does something else, such as deciding."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import MuretaiError

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal
    from mcp import Client

__all__ = ["ToolSession", "tool_session"]

READ_TIMEOUT = 60.0  # seconds one answer may take (a wait is at most 30)


class ToolSession:
    """One client session with one server process; results are the tools' documents."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self._portal = portal
        self._client = client

    async def _call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        got = await self._client.call_tool(name, args)
        doc = got.structured_content
        if got.is_error or not isinstance(doc, dict):
            raise MuretaiError("tool-failed", f"{name}: the server answered no result "
                                              "document")
        return doc

    def call(self, name: str, **args: Any) -> dict[str, Any]:
        """Call ``name`` and wait for its result."""
        return self._portal.call(self._call, name, args)

    def call_soon(self, name: str, **args: Any) -> Future[dict[str, Any]]:
        """Call ``name`` in the background; its result is the future's."""
        return self._portal.start_task_soon(self._call, name, args)


@contextlib.contextmanager
def tool_session(argv: list[str], env: dict[str, str]) -> Iterator[ToolSession]:
    """A session with the server ``argv`` starts (over its stdin and stdout), ended (and the
    process with it) when the block ends."""
    from anyio.from_thread import start_blocking_portal
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    with start_blocking_portal() as portal, \
            portal.wrap_async_context_manager(
                Client(params, read_timeout_seconds=READ_TIMEOUT)) as client:
        yield ToolSession(portal, client)
