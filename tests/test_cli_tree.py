"""The command tree: main() registers only the invoked group, help still lists them all."""

from __future__ import annotations

import subprocess
import sys

import pytest

from muretai_cli.cli import _REGISTER, _invoked, build_app
from tests.cli_helpers import run


def test_help_lists_every_top_level_command() -> None:
    out = run("--help").stdout
    for name in _REGISTER:
        assert name in out, name


@pytest.mark.parametrize(("argv", "group"), [
    (["did", "resolve", "x"], "did"),
    (["op", "--as", "alice", "contact", "dm"], "op"),
    (["--version"], None),
    (["nosuch"], None),
    ([], None),
])
def test_invoked_group(argv: list[str], group: str | None) -> None:
    assert _invoked(argv) == group


def test_a_single_group_tree_has_only_that_group() -> None:
    import typer.main

    names = set(typer.main.get_group(build_app("did")).commands)
    assert names == {"did"}


def test_console_entry_point_runs_one_group() -> None:
    proc = subprocess.run([sys.executable, "-m", "muretai_cli", "did", "resolve",
                           "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and '"keyAgreement"' in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "muretai_cli", "nosuch"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "No such command" in proc.stderr
