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
    """Expand a did:key into its DID document (offline). A malformed DID exits 1."""
    from muretai_cli.did import describe_did

    info = describe_did(did)
    if json_out:
        emit_json({"ok": True, **info})
        return
    say(json.dumps(info["didDocument"], indent=2))
    for warning in info["warnings"]:
        note(f"warning: {safe(warning)}")
