"""A DID option given a name checks against the DID the name resolves to (issue 22, item 10).

Each option is run as the command line runs it (``in_process``) with a valid record and the NAME of the
identity it must be for: exit 0. A malformed DID is a usage error (2 ``bad-did``), never a
refusal (1).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_helpers import in_process, new_identity, run
from tests.repo_files import ROOT

SOURCES = ROOT / "muretai_cli" / "cli"


def _signed(tmp_path: Path, name: str, *argv: str) -> str:
    result = run(*argv)
    assert result.exit_code == 0, result.stderr
    path = tmp_path / name
    path.write_text(result.stdout)
    return str(path)


@pytest.fixture
def records(tmp_path: Path) -> dict[str, list[str]]:
    """``verify`` argv (minus the name) for each DID option, each record valid for its name."""
    for name in ("root", "op1", "dev", "door", "org", "agent"):
        new_identity(name)
    return {
        "keystate --root": ["keystate", _signed(tmp_path, "ks.json", "sign", "keystate",
                                                "--as", "root", "--op", "op1"), "--root"],
        "owner-state --root": ["owner-state", _signed(tmp_path, "os.json", "sign",
                                                      "owner-state", "--as", "root",
                                                      "--revoke", "dev"), "--root"],
        "binding --device": ["binding", _signed(tmp_path, "b.json", "sign", "binding",
                                                "--as", "root", "--device", "dev"), "--device"],
        "grant --for": ["grant", _signed(tmp_path, "g.json", "op", "--as", "door", "contact",
                                         "issue", "--uses", "1"), "--for"],
        "org --agent": ["org", _signed(tmp_path, "m.json", "org", "attest", "--as", "org",
                                       "--member", "agent", "--name", "Acme"), "--agent"],
    }


NAME_OF = {"keystate --root": "root", "owner-state --root": "root", "binding --device": "dev",
           "grant --for": "door", "org --agent": "agent"}


@pytest.mark.parametrize("option", sorted(NAME_OF))
def test_a_name_is_checked_as_the_did_it_names(option: str,
                                               records: dict[str, list[str]]) -> None:
    name = NAME_OF[option]
    did = run("id", "show", name, "--json")
    assert did.exit_code == 0
    proc = in_process("verify", *records[option], name, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True and doc["results"][0]["ok"] is True
    assert f"{records[option][-1]} {name} = did:key:" in proc.stderr   # said on stderr
    # the same record for another identity's name is still refused (1), for its own reason
    other = in_process("verify", *records[option], "op1" if name != "op1" else "dev")
    assert other.returncode == 1, other.stdout + other.stderr


@pytest.mark.parametrize("option", sorted(NAME_OF))
def test_a_malformed_did_is_a_usage_error(option: str, records: dict[str, list[str]]) -> None:
    for value in ("notadid", "did:key:znope"):
        proc = in_process("verify", *records[option], value)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "bad-did" in proc.stderr and "Traceback" not in proc.stderr
        proc = in_process("verify", *records[option], value, "--json")
        assert proc.returncode == 2
        doc = json.loads(proc.stdout)
        assert doc["ok"] is False and doc["error"] == "bad-did"


def test_no_command_drops_what_did_option_resolved() -> None:
    """``did_option(...)`` as a bare statement resolves a name and throws the DID away."""
    dropped = [f"{path.name}:{n}" for path in sorted(SOURCES.glob("*.py"))
               for n, line in enumerate(path.read_text().splitlines(), 1)
               if re.match(r"\s*did_option\(", line)]
    assert dropped == []
