"""``muretai relay serve``: a blind store-and-forward relay for many DIDs.

starlette, uvicorn and the database layer are imported inside the command, never at CLI
import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from muretai_cli.cli._out import note
from muretai_cli.cli._text import safe
from muretai_cli.errors import InputError
from muretai_cli.transport import IDLE_SECONDS, MAX_CONNECTIONS, MAX_PER_CLIENT

if TYPE_CHECKING:
    from muretai_cli.transport.serve import Listening

app = typer.Typer(no_args_is_help=True, help="Run a blind relay: sealed DMs for many DIDs.")


@app.command("serve")
def serve(
    url: Annotated[str, typer.Option("--url", help="The relay's public URL (https, or http on "
                                                   "loopback); routes hang off its path and "
                                                   "listen tokens name its origin.")],
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to bind (0: any free port).")] = 8790,
    db: Annotated[str | None, typer.Option(
        "--db", envvar="MURETAI_DB", show_envvar=True,
        help="SQLite file or postgresql:// URL (default: $MURETAI_HOME/relay/"
             "relay.sqlite3), as for `db init --relay`.")] = None,
    max_body: Annotated[int, typer.Option("--max-body", help="Largest request body, bytes.")]
    = 512 * 1024,
    max_blob: Annotated[int, typer.Option("--max-blob", help="Largest blob, base64 characters.")]
    = 256 * 1024,
    rate_per_sender: Annotated[int, typer.Option(
        "--rate-per-sender", help="Deposits per minute per sender (0 disables).")] = 60,
    rate_per_mailbox: Annotated[int, typer.Option(
        "--rate-per-mailbox", help="Deposits per minute into one mailbox (0 disables).")] = 600,
    max_waiting: Annotated[int, typer.Option(
        "--max-waiting", help="Undelivered messages per DID; past it, 507.")] = 1000,
    expire: Annotated[str, typer.Option(
        "--expire", help="Drop undelivered messages after this long: 12h, 7d, 2w.")] = "7d",
    max_connections: Annotated[int, typer.Option(
        "--max-connections", help="Open connections at once, held listens included; past it "
                                  "a newcomer takes the place of the longest-idle one, or "
                                  "gets HTTP 503 (0 disables).")] = MAX_CONNECTIONS,
    max_per_client: Annotated[int, typer.Option(
        "--max-per-client", help="Open connections from one address, held listens included; "
                                 "past it HTTP 503 (0 disables).")] = MAX_PER_CLIENT,
    idle_seconds: Annotated[float, typer.Option(
        "--idle-seconds", help="A connection waiting for a request closes after this.")
    ] = IDLE_SECONDS,
    durable: Annotated[bool, typer.Option(
        "--durable", help="synchronous=FULL: commits also survive power loss.")] = False,
    slow_seconds: Annotated[float, typer.Option(
        "--slow-seconds", help="One deadline for a request's head and body.")] = 10.0,
    http: Annotated[str, typer.Option(
        "--http", hidden=True, help="HTTP parser: auto | httptools | h11.")] = "auto",
    workers: Annotated[int, typer.Option(
        "--workers", min=1, help="Processes serving on the one port (PostgreSQL only: they "
                                 "wake each other's long-polls through it).")] = 1,
) -> None:
    """Serve send, listen, ack and card for any DID. The relay never sees text."""
    from muretai_cli.cli._durations import parse_duration
    from muretai_cli.urls import parse_base_url

    for flag, value in (("--max-body", max_body), ("--max-blob", max_blob),
                        ("--max-waiting", max_waiting)):
        if value < 1:
            raise InputError("bad-limit", f"{flag} is a positive whole number")
    for flag, value in (("--rate-per-sender", rate_per_sender),
                        ("--rate-per-mailbox", rate_per_mailbox),
                        ("--max-connections", max_connections),
                        ("--max-per-client", max_per_client)):
        if value < 0:
            raise InputError("bad-limit", f"{flag} is a whole number; 0 disables")
    for flag, seconds in (("--slow-seconds", slow_seconds), ("--idle-seconds", idle_seconds)):
        if not 0 < seconds <= 300:
            raise InputError("bad-limit", f"{flag} is more than 0 and at most 300")
    if not 0 <= port <= 65535:
        raise InputError("bad-port", f"--port {port} is outside 0-65535")
    base = parse_base_url(url)
    if base.text != url:
        note(f"serving as {base.text} (the canonical form of {safe(url)})")

    from muretai_cli.relay.limits import RelayConfig, RelayLimits
    from muretai_cli.relay.serve import serve_relay

    limits = RelayLimits(max_body=max_body, max_blob=max_blob, per_sender=rate_per_sender,
                         per_mailbox=rate_per_mailbox, max_waiting=max_waiting,
                         expire_seconds=parse_duration(expire, name="--expire"))
    config = RelayConfig(url=base, limits=limits, slow_seconds=slow_seconds,
                         max_connections=max_connections, max_per_client=max_per_client,
                         idle_seconds=idle_seconds, durable=durable)

    def listening(at: Listening, where: str) -> None:
        note(f"relay listening on {at.address} for {base.text} "
             f"(tokens name {base.origin}; db {where})"
             + (f" ({workers} workers)" if workers > 1 else ""))

    code = serve_relay(config, db=db, host=host, port=port, workers=workers, http=http,
                       on_listening=listening, log=note)
    if code:
        raise typer.Exit(code)
