"""Running the CLI in-process, with stdout and stderr kept apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from muretai_cli.cli import app


def run(*args: str, input: str | bytes | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)


def run_json(*args: str, input: str | bytes | None = None) -> tuple[int, dict[str, Any]]:
    result = run(*args, "--json", input=input)
    doc = json.loads(result.stdout)
    assert next(iter(doc)) == "ok", "the first key of every --json document is ok"
    return result.exit_code, doc


def new_identity(name: str, keys: Path | None = None) -> str:
    extra = ["--keys", str(keys)] if keys else []
    result = run("id", "new", name, *extra)
    assert result.exit_code == 0, result.stderr
    return result.stdout.strip()


def muretai(*argv: str, input: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``muretai`` command in its own process (the test's environment, plus ``env``)."""
    return subprocess.run([sys.executable, "-m", "muretai_cli", *argv], input=input,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, check=False)
