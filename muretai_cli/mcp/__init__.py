"""The MCP shell: ``muretai mcp --as NAME``, one identity's tools over stdio.

A second thin shell beside ``cli/``: it validates tool arguments, calls the library and
renders results as WebMCP Conventions documents. Only this package and ``cli/`` import the
``mcp`` SDK, and ``cli/`` only inside the ``mcp`` command (and the demo, whose agent part is
a client session: ``tool_session``), so no other command pays for it.
"""

from __future__ import annotations

__all__ = ["ToolSession", "build_server", "run_server", "tool_session"]

from muretai_cli.mcp._client import ToolSession, tool_session
from muretai_cli.mcp.server import build_server, run_server
