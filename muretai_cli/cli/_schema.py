"""``muretai schema list|show NAME``: the JSON Schemas of the artifacts a CI validates."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, say

app = typer.Typer(no_args_is_help=True, help="JSON Schemas for the artifacts a CI validates.")


@app.command("list")
def list_(json_out: JsonOpt = False) -> None:
    """List the schemas, one name and title a line."""
    from muretai_cli.schemas import load, names

    rows = [{"name": n, "title": load(n).get("title", "")} for n in names()]
    if json_out:
        emit_json({"ok": True, "schemas": rows})
        return
    for row in rows:
        say(f"{row['name']:<32} {row['title']}")


@app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="A name from `muretai schema list`.")],
    json_out: Annotated[bool, typer.Option(
        "--json", help="Accepted for symmetry: the output is the schema itself.")] = False,
) -> None:
    """Print one schema (JSON), e.g. to save it for another validator."""
    from muretai_cli.schemas import text

    sys.stdout.write(text(name))
