"""Offline commands stay offline in what they import: no HTTP client, server or database.

A command-line tool pays for every import on every start, and an offline verifier that
drags in the network stack also drags in its attack surface. Each check runs in a fresh
interpreter, since this test process has long since imported everything.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from muretai_cli.artifacts.message import build_message_send, signed_message
from muretai_cli.seam import SigningKey, sign_card_envelope
from tests.repo_files import ROOT

FORBIDDEN = ("httpx", "uvicorn", "starlette", "sqlite3", "_sqlite3", "h11", "anyio",
             "psycopg", "psycopg_pool")
SENDER = SigningKey(bytes([1]) * 32)
ME = SigningKey(bytes([2]) * 32)
NOW = 1784273681


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=False)


def test_importing_the_cli_loads_no_network_or_database_module() -> None:
    code = textwrap.dedent(f"""
        import sys
        import muretai_cli.cli
        print(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}))
    """)
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_offline_commands_load_no_network_or_database_module(tmp_path: Path) -> None:
    message = tmp_path / "message.json"
    message.write_text(json.dumps(build_message_send(
        signed_message(SENDER, to=ME.did, text="hi", now=NOW))))
    card = tmp_path / "card.json"
    card.write_text(json.dumps(sign_card_envelope(SENDER, {"name": "n"}, NOW)))
    keys = tmp_path / "keys"
    commands = [
        ["did", "resolve", SENDER.did],
        ["did", "resolve", SENDER.did, "--json"],
        ["did", "resolve", "did:key:zbad"],
        ["id", "new", "alice", "--keys", str(keys)],
        ["id", "list", "--keys", str(keys)],
        ["id", "show", "alice", "--doc", "--keys", str(keys)],
        ["verify", "message", str(message), "--to", ME.did, "--now", str(NOW)],
        ["verify", "card", str(card), "--did", SENDER.did, "--now", str(NOW)],
    ]
    code = textwrap.dedent(f"""
        import json, sys
        from typer.testing import CliRunner
        from muretai_cli.cli import app
        codes = [CliRunner().invoke(app, args).exit_code for args in {commands!r}]
        loaded = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})
        print(json.dumps({{"codes": codes, "loaded": loaded}}))
    """)
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # every command ran to a verdict (0 ok / 2 a malformed DID), so its imports were really
    # exercised
    assert report["codes"] == [0, 0, 2, 0, 0, 0, 0, 0], report
    assert report["loaded"] == []


@functools.cache
def _did_resolve_imports() -> frozenset[str]:
    """Every module ``muretai did resolve`` imports, as -X importtime sees the real process."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "muretai_cli", "did", "resolve", SENDER.did],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return frozenset(line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                     if line.startswith("import time:"))


def test_did_resolve_as_a_process_imports_no_network_module() -> None:
    """The real entry point, measured the way -X importtime sees it."""
    imported = _did_resolve_imports()
    assert "muretai_cli.artifacts.diddoc" in imported  # the measurement saw the command's own imports
    assert not {m for m in imported if m.split(".")[0] in FORBIDDEN}
    assert "cryptography" not in {m.split(".")[0] for m in imported}  # resolve needs no crypto


STDLIB_NETWORK = ("ssl", "http", "urllib.request")  # email and socket: Typer's own floor


def test_did_resolve_loads_no_stdlib_network_stack() -> None:
    imported = _did_resolve_imports()
    assert not {m for m in imported if m.split(".")[0] in ("ssl", "http")
                or m in STDLIB_NETWORK}


def test_offline_import_does_not_load_httpx() -> None:
    import subprocess
    import sys

    code = ("import sys, muretai_cli.net, muretai_cli.visit.handoff, muretai_cli.visit.card, "
            "muretai_cli.visit.dm, muretai_cli.cli; "
            "print('httpx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
