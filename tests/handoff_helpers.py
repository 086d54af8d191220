"""In-process CLI runs on a DID-addressed (offline) site's tool results: what the CLI
input and rendering tests share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from muretai_cli.cli import app
from muretai_cli.seam import SigningKey

SITE_KEY = SigningKey(b"\x05" * 32)
SITE = f"https://muretai.net/{SITE_KEY.did.split(':')[-1]}"  # DID-addressed: offline, no card


def cli(*args: str, input: str | bytes | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=input)


def write(tmp_path: Path, doc: Any, name: str = "result.json") -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def meta(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "done"}],
            "_meta": {"handoff": {"v": 1, "next": list(entries)}}}
