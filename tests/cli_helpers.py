"""Running the CLI in a test: in this process (fast), or as a real process (when the process
itself is under test).

    run("id", "new", "alice")              in-process through typer's CliRunner: a ``Result``
                                           (``exit_code``, ``stdout``, ``stderr`` kept apart)
    run_json("id", "list")                 the same with ``--json``: (exit code, the document)
    in_process("did", "resolve", x, "--json", env={...}, input=...)
                                           in-process AS THE COMMAND LINE RUNS (``main``:
                                           ``--wait=N``, ``--json`` usage errors as one
                                           document): a ``CompletedProcess`` like ``muretai``'s
    muretai("did", "resolve", x, env={...}) a real ``python -m muretai_cli`` process

Choose ``in_process`` (or ``run``) unless the process boundary is what the test is about:
signals and Ctrl-C, cold start and what a command imports, the ``--exec`` / ``--on-message``
children, ``serve`` / ``relay serve`` processes, an environment the interpreter reads at
start (``PYTHON*``, locale), or a journey the brief wants as real processes (keep at least
one real-process test per command family). ``in_process`` returns the same
``CompletedProcess`` (``returncode``, ``stdout``, ``stderr``), so a test moves between the two
by its call alone.

What an in-process run shares with the test: the environment (``env`` is applied for the
run and put back; the suite's autouse fixture gives each test its own ``$MURETAI_HOME``),
the working directory, and module state (pure caches only). The whole command tree's
click command is built once per process (``command()``): typer's conversion of the tree
costs ~0.1 s of CPU, which every ``CliRunner().invoke(app, ...)`` used to pay;
``tests/conftest.py`` hands the same cached command to every such call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import typer.main
from typer.testing import CliRunner, Result

from muretai_cli.cli import app, main

__all__ = ["cached_command_for", "command", "in_process", "muretai", "new_identity", "run",
           "run_json"]


@cache
def command() -> Callable[..., Any]:
    """The whole tree (``muretai_cli.cli.app``) as its click command, built once."""
    return typer.main.get_command(app)


def run(*args: str, input: str | bytes | None = None,
        env: Mapping[str, str | None] | None = None) -> Result:
    """``muretai ARGS`` as the root command runs it (not ``main``'s argv handling), in this
    process; an exception no command catches is raised in the test."""
    return CliRunner().invoke(app, list(args), input=input, env=env, catch_exceptions=False)


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


def in_process(*argv: str, input: str | None = None,
               env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``muretai ARGV`` through ``muretai_cli.cli.main`` in this process, stdout and stderr
    apart, the exit code as ``returncode``: what ``muretai(...)`` gives, without a new
    interpreter. An exception that escapes ``main`` (a traceback, in a real process) is
    raised in the test."""
    runner = CliRunner()
    code: int = 0
    with runner.isolation(input=input, env=env) as (out, err, _):
        try:
            main(list(argv), app=command())
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                sys.stderr.write(f"{exc.code}\n")
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            stdout, stderr = out.getvalue(), err.getvalue()
    return subprocess.CompletedProcess(["muretai", *argv], code,
                                       stdout.decode("utf-8", "replace"),
                                       stderr.decode("utf-8", "replace"))


def muretai(*argv: str, input: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``muretai`` command in its own process (the test's environment, plus ``env``)."""
    return subprocess.run([sys.executable, "-m", "muretai_cli", *argv], input=input,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, check=False)


def cached_command_for(real: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``typer.main.get_command`` that answers the whole tree from ``command()`` (and
    builds any other Typer app as before): conftest installs it for ``CliRunner``."""

    def get_command(typer_app: Any) -> Any:
        return command() if typer_app is app else real(typer_app)

    return get_command
