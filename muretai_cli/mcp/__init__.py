"""The MCP shell: ``muretai mcp --as NAME``, one identity's tools over stdio.

A second thin shell beside ``cli/``: it validates tool arguments, calls the library and
renders results as WebMCP Conventions documents. Only this package and ``cli/`` import the
``mcp`` SDK, and ``cli/`` only inside the ``mcp`` command, so no other command pays for it.
"""

from __future__ import annotations

__all__ = ["build_server", "run_server"]

from muretai_cli.mcp.server import build_server, run_server
