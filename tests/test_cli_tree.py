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


@pytest.mark.parametrize("argv", [
    ["verify", "message", "--to", "x", "--json"],
    ["nosuch", "--json"],
    ["verify", "card", "f.json", "--did", "d", "--now", "abc", "--json"],
])
def test_usage_errors_under_json_are_one_json_document(argv: list[str]) -> None:
    import json

    proc = subprocess.run([sys.executable, "-m", "muretai_cli", *argv],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert list(doc)[:2] == ["ok", "error"] and doc["ok"] is False and doc["error"] == "usage"
    assert "Traceback" not in proc.stderr


def test_exit_codes_pass_through_under_json() -> None:
    proc = subprocess.run([sys.executable, "-m", "muretai_cli", "did", "resolve", "bad",
                           "--json"], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and '"bad-did"' in proc.stdout
