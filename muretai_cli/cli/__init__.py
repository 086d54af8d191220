"""The command line: parses arguments, calls the library, renders results.

The only layer that prints or exits. Command modules import the library inside each
command, so a command pays only for what it uses (``did resolve`` never loads httpx).
"""

from __future__ import annotations

import typer

from muretai_cli import __version__
from muretai_cli.cli import (
    _card,
    _conformance,
    _demo,
    _did,
    _door,
    _handoff,
    _id,
    _lint,
    _op,
    _org,
    _sign,
    _verify,
)

app = typer.Typer(
    name="muretai",
    help="DID messaging between AI agents: identities, signed cards, handoffs, signed DMs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"muretai {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """muretai: DID messaging between AI agents."""


app.add_typer(_id.app, name="id")
app.add_typer(_did.app, name="did")
app.add_typer(_sign.app, name="sign")
app.add_typer(_verify.app, name="verify")
app.command("conformance")(_conformance.conformance)
app.add_typer(_card.app, name="card", help="Fetch and verify Agent Cards; manage pins.")
app.add_typer(_handoff.app, name="handoff", help="Check a WebMCP tool result's handoff.")
app.add_typer(_org.app, name="org", help="Org memberships and the local trust list.")
app.add_typer(_door.contact_app, name="contact")
app.add_typer(_op.app, name="op")
app.add_typer(_lint.app, name="conventions", help="Lint WebMCP tool results.")
_door.register(app)
app.command("demo")(_demo.demo)


def main() -> None:
    app()
