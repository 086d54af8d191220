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
    url: Annotated[str | None, typer.Option(
        "--url", help="Your door's public base URL (as `serve --url`): whoami asks it for "
                      "your card.", show_default=False)] = None,
    allow_private: Annotated[bool, typer.Option(
        "--allow-private", help="Let read_site read loopback and private addresses (your "
                                "own staging door).")] = False,
) -> None:
    """Serve this identity's tools (whoami, send_message, requests_respond, …) over stdio."""
    from muretai_cli.mcp import run_server
    from muretai_cli.urls import parse_base_url

    door = parse_base_url(url).text if url else None  # a bad URL is refused before serving
    ident = load_identity(as_, keys)
    ident.signing_key()  # unreadable keys fail here, before a client is told anything
    run_server(ident, db, agent_may_decide=agent_may_decide, door_url=door,
               allow_private=allow_private)
