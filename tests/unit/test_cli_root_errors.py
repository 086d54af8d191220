"""Issue 19 §3: the error family is caught once, in the root command, not per command.

Each test fails if ``RootGroup.invoke`` stops catching ``MuretaiError`` (the error escapes
as an exception, with no document and no exit code of its own)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer
from typer.testing import CliRunner

import muretai_cli
from muretai_cli.cli._out import JsonOpt
from muretai_cli.cli._tree import RootGroup
from muretai_cli.errors import PeerRefused, Refused


def _app() -> typer.Typer:
    root = typer.Typer(cls=RootGroup, pretty_exceptions_enable=False)
    group = typer.Typer()

    @group.callback()
    def _group(fail_here: bool = typer.Option(False, "--fail-in-group")) -> None:
        if fail_here:
            raise Refused("group-refused", "refused before the command ran")

    @group.command("go")
    def _go(json_out: JsonOpt = False) -> None:
        raise PeerRefused("nope", "the peer said no", hint="ask again later")

    @group.command("other")
    def _other() -> None:
        """A second command, so the group stays a group."""

    root.add_typer(group, name="grp")
    return root


def test_a_command_s_error_is_one_line_on_stderr_and_its_exit_code() -> None:
    result = CliRunner().invoke(_app(), ["grp", "go"])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 4
    assert result.stdout == ""
    assert result.stderr == "error: nope: the peer said no\n  hint: ask again later\n"


def test_with_json_the_error_is_one_document_whose_first_key_is_ok() -> None:
    result = CliRunner().invoke(_app(), ["grp", "go", "--json"])
    assert result.exit_code == 4
    doc = json.loads(result.stdout)
    assert next(iter(doc)) == "ok" and doc["ok"] is False and doc["error"] == "nope"
    assert doc["hint"] == "ask again later"


def test_an_error_in_a_group_callback_is_caught_too() -> None:
    result = CliRunner().invoke(_app(), ["grp", "--fail-in-group", "go"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: group-refused: ")


def test_no_command_catches_the_error_family_itself() -> None:
    cli = Path(muretai_cli.__file__).parent / "cli"
    decorated = [f"{path.name}:{number}" for path in sorted(cli.glob("*.py"))
                 for number, line in enumerate(path.read_text().splitlines(), start=1)
                 if re.match(r"\s*@handles_errors\b", line)]
    assert decorated == []
