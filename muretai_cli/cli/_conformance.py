"""``muretai conformance FILE``: run a seam vectors file, group by group."""

from __future__ import annotations

from typing import Annotated

import typer

from muretai_cli.cli._input import read_input
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, say
from muretai_cli.cli._text import safe


def conformance(
    file: Annotated[str, typer.Argument(help="A seam vectors file (e.g. wire_vectors.json).")],
    json_out: JsonOpt = False,
) -> None:
    """Run every group muretai implements; list the rest as skipped, by name. Exit 1 on failure."""
    from muretai_cli.conformance import run_conformance
    from muretai_cli.seam import parse_document

    results = run_conformance(parse_document(read_input(file, limit=64 * 1024 * 1024)))
    failed = [r for r in results if r.status == "failed"]
    if json_out:
        emit_json({"ok": not failed, "file": file, "groups": [r.to_json() for r in results],
                   "summary": {s: sum(r.status == s for r in results)
                               for s in ("passed", "failed", "skipped")}})
    else:
        for r in results:
            extra = f"{r.cases} cases" if r.status != "skipped" else r.reason
            say(f"{r.status:<8} {r.group:<22} {extra}")
            for failure in r.failures:
                say(f"         ✗ {safe(failure)}")
        counts = {s: sum(r.status == s for r in results) for s in ("passed", "failed", "skipped")}
        say(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    if failed:
        raise typer.Exit(1)
