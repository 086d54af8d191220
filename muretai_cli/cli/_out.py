"""The output streams: stdout carries only the result, diagnostics go to stderr; an error
is rendered by ``fail`` (one JSON document under ``--json``, else a line on stderr).

The rest of rendering lives by concern: ``_text`` (safe terminal text), ``_json`` (the
documents), ``_input`` (files and stdin), ``_batch`` (the verify commands' batches),
``_dids`` (a DID or a name for one), ``_acting`` (who the command acts as).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from muretai_cli.cli._json import emit_json
from muretai_cli.cli._text import safe
from muretai_cli.errors import MuretaiError

# Eager, so a callback of another option (a DID resolved as it is parsed) knows the format.
JsonOpt = Annotated[bool, typer.Option("--json", is_eager=True,
                                       help="Print one JSON document (first key: ok).")]


def say(text: str = "") -> None:
    """A line of result on stdout."""
    sys.stdout.write(text + "\n")


def note(text: str) -> None:
    """A diagnostic on stderr."""
    sys.stderr.write(text + "\n")


def fail(exc: MuretaiError, json_out: bool) -> typer.Exit:
    """Render an error and return the ``typer.Exit`` to raise."""
    if json_out:
        emit_json(exc.to_json())
    else:
        note(f"error: {safe(exc.diagnostics(), multiline=True)}")
    return typer.Exit(exc.exit_code)
