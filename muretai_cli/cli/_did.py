"""``muretai did``: offline did:key work."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe

app = typer.Typer(help="Resolve did:key identifiers offline.", no_args_is_help=True)


@app.command("resolve")
def resolve(
    did: Annotated[str, typer.Argument(help="A did:key identifier.")],
    json_out: JsonOpt = False,
) -> None:
    """Expand a did:key into its DID document (offline). A malformed DID exits 2."""
    from muretai_cli.artifacts.diddoc import describe_did
    from muretai_cli.errors import InputError, MuretaiError

    try:
        info = describe_did(did)
    except MuretaiError as exc:  # the input is unreadable (2), as a DID argument is anywhere
        raise InputError(exc.code, exc.detail) from None
    if json_out:
        emit_json({"ok": True, **info})
        return
    say(json.dumps(info["didDocument"], indent=2))
    for warning in info["warnings"]:
        note(f"warning: {safe(warning)}")
