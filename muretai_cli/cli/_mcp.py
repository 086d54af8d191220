"""``muretai mcp --as NAME``: serve one identity's tools to an MCP client over stdio.

The SDK is imported here, inside the command, so no other command's start-up pays for it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from muretai_cli.cli._acting import AsOpt, DbOpt, KeysOpt, load_identity


def mcp(
    as_: AsOpt = None,
    db: DbOpt = None,
    keys: KeysOpt = None,
    agent_may_decide: Annotated[bool, typer.Option(
        "--agent-may-decide",
        help="Let the agent approve held strangers and mint invites without asking you. "
             "Off by default: those tools ask you (elicitation) or return the command you run.")
    ] = False,
) -> None:
    """Serve this identity's tools (whoami, send_message, requests_respond, …) over stdio."""
    from muretai_cli.mcp import run_server

    ident = load_identity(as_, keys)
    ident.signing_key()  # unreadable keys fail here, before a client is told anything
    run_server(ident, db, agent_may_decide=agent_may_decide)
