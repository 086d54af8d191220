"""The command tree: main() registers only the invoked group, help still lists them all."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from muretai_cli.cli import _REGISTER, _invoked, build_app
from tests.cli_helpers import new_identity, run
from tests.repo_files import ROOT


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


# A valid did:key: a malformed one would be refused first (bad-did, exit 2 too).
_DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


@pytest.mark.parametrize("argv", [
    ["verify", "message", "--to", _DID, "--json"],   # no FILES
    ["nosuch", "--json"],
    ["verify", "card", "f.json", "--did", _DID, "--now", "abc", "--json"],
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
    assert proc.returncode == 2 and '"bad-did"' in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "muretai_cli", "conventions", "lint",
                           "examples/conventions-broken.json", "--json"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and json.loads(proc.stdout)["ok"] is False


# ---- naming the identity: --as anywhere, MURETAI_AS, help without an identity --------------

def _muretai(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "muretai_cli", *argv], capture_output=True,
                          text=True, check=False, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("argv", [
    ["op", "--as", "me", "contact", "grants", "--json"],
    ["op", "contact", "--as", "me", "grants", "--json"],
    ["op", "contact", "grants", "--as", "me", "--json"],
    ["op", "contact", "grants", "--json", "--as=me"],
    ["contact", "grants", "--as", "me", "--json"],  # the old spelling, kept as an alias
])
def test_as_is_accepted_anywhere_on_the_line(argv: list[str]) -> None:
    new_identity("me")
    result = run(*argv)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"ok": True, "grants": []}


def test_as_after_the_subcommand_in_a_real_process() -> None:
    new_identity("me")
    proc = _muretai("op", "contact", "issue", "--uses", "2", "--as", "me", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["grant"]["uses"] == 2
    proc = _muretai("serve", "--url", "http://127.0.0.1:1", "--dm-policy", "nope", "--as", "me")
    assert proc.returncode == 2 and "bad-policy" in proc.stderr


def test_muretai_as_names_the_default_identity() -> None:
    me = new_identity("me")
    new_identity("other")
    proc = _muretai("op", "contact", "issue", "--uses", "1", "--json", env={"MURETAI_AS": "me"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["grant"]["did"] == me
    proc = _muretai("sign", "message", "hi", "--to", me, env={"MURETAI_AS": "other"})
    signed = json.loads(proc.stdout)["params"]["message"]["metadata"]
    assert proc.returncode == 0 and signed["from"] != me and signed["to"] == me
    # an explicit --as wins over the environment, wherever it is typed
    proc = _muretai("op", "contact", "issue", "--uses", "1", "--json", "--as", "other",
                    env={"MURETAI_AS": "me"})
    assert json.loads(proc.stdout)["grant"]["did"] != me


def test_no_identity_is_a_usage_error_that_says_how() -> None:
    proc = _muretai("op", "inbox")
    assert proc.returncode == 2
    assert "--as NAME" in proc.stderr and "MURETAI_AS" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("argv", [["op", "inbox", "--help"], ["op", "contact", "dm", "-h"],
                                  ["op", "requests", "approve", "--help"], ["serve", "-h"],
                                  ["contact", "issue", "-h"], ["-h"]])
def test_help_needs_no_identity(argv: list[str]) -> None:
    proc = _muretai(*argv)
    assert proc.returncode == 0, proc.stderr
    assert "Usage: muretai" in proc.stdout


def test_the_old_contact_spelling_is_a_hidden_alias() -> None:
    top = run("--help").stdout
    assert "│ contact" not in top and "│ op" in top
    dm_help = run("op", "contact", "--help").stdout
    for verb in ("issue", "grants", "revoke", "dm", "list"):
        assert f"│ {verb}" in dm_help, verb


# ---- help reads as a shell user types it -------------------------------------------------

def _every_command(group: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(group, "commands", {}).items():
        found += _every_command(sub, (*path, name))
    return found


def test_help_shows_flags_as_flags_and_values_by_name(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    import typer.main

    from muretai_cli.cli import app

    tree = typer.main.get_command(app)  # built once; each help rendered from it
    paths = _every_command(tree)
    assert len(paths) > 40
    for path in paths:
        capsys.readouterr()
        code = tree.main([*path, "--help"], prog_name="muretai", standalone_mode=False)
        text = capsys.readouterr().out
        assert code in (0, None) and "Usage: muretai" in text, (path, text)
        usage = next(line for line in text.splitlines() if "Usage:" in line)
        assert "{" not in usage, (path, usage)
        for junk in ("<bool>", "<str>", "<int", "<list", "<path", "[x>", "[x<"):
            assert junk not in text, (path, junk)
    dm = run("op", "contact", "dm", "--help").stdout
    assert "DID [MESSAGE]" in dm and "--max-bytes" in dm and "INTEGER" in dm
    assert "(at least 1)" in dm


def test_command_summaries_are_one_line() -> None:
    import typer.main

    from muretai_cli.cli import app

    tree = typer.main.get_command(app)
    for path in _every_command(tree)[1:]:
        sub = tree
        for name in path:
            sub = sub.commands[name]  # type: ignore[attr-defined]
        first = (sub.help or "").split("\n\n")[0]
        assert "\n" not in first, path


def test_shell_completion_is_enabled() -> None:
    import os
    from pathlib import Path

    script = Path(sys.executable).with_name("muretai")
    proc = subprocess.run([str(script), "--show-completion", "bash"], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0 and "_MURETAI_COMPLETE" in proc.stdout
    env = {**os.environ, "_MURETAI_COMPLETE": "complete_bash", "COMP_WORDS": "muretai op conta",
           "COMP_CWORD": "2"}
    proc = subprocess.run([str(script)], capture_output=True, text=True, check=False, env=env)
    assert proc.stdout.split() == ["contact"]


def test_times_for_people_carry_their_zone() -> None:
    from muretai_cli.cli._text import when

    assert when(1_800_000_000) == "2027-01-15 08:00:00 UTC"
    assert when(None) == "-" and when(0) == "-" and when("x") == "?" and when(True) == "?"
    assert when(10**20) == "?"
    new_identity("me")
    assert run("op", "contact", "issue", "--as", "me", "--uses", "1").exit_code == 0
    listing = run("op", "contact", "grants", "--as", "me").stdout
    assert " UTC" in listing


@pytest.mark.parametrize("argv", [
    ["did", "resolve", "bad", "--json"],        # a refusal under --json: exit 2, one document
    ["did", "resolve", "--nope", "--json"],     # a usage error under --json: main's own path
    ["op", "inbox", "--wait=31", "--as", "x"],  # --wait=N split by main
    ["nosuch"],
])
def test_in_process_runs_a_command_as_the_real_process_does(argv: list[str]) -> None:
    # tests.cli_helpers.in_process stands in for a process in many tests: same exit code,
    # same stdout, same stderr
    from tests.cli_helpers import in_process, muretai

    real, here = muretai(*argv), in_process(*argv)
    assert (here.returncode, here.stdout, here.stderr) == (real.returncode, real.stdout,
                                                           real.stderr)
