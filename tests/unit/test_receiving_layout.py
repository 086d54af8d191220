"""The receiving side's house rules, checked on the source: JSON-RPC codes named once (the
ladder's ``Code``), no engine sniffed in the stores or the door (a capability the database
declares chooses the batch SQL), and no module of the receiving side (inbox/, door/, db/)
too long to find one's way in."""

from __future__ import annotations

import re
from pathlib import Path

from tests.repo_files import ROOT

PACKAGE = ROOT / "muretai_cli"
MAX_LINES = 500


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_json_rpc_codes_are_written_only_in_the_ladders_table() -> None:
    literal = re.compile(r"-320\d\d\b")
    found = [f"{p.relative_to(PACKAGE)}:{n}" for p in _sources()
             if p != PACKAGE / "inbox" / "ladder.py"
             for n, line in enumerate(p.read_text().splitlines(), 1) if literal.search(line)]
    assert found == []


def test_the_stores_and_the_door_never_ask_which_engine_they_run_on() -> None:
    # the relay's store too: it chooses its batch SQL and NOTIFY by what the database declares
    found = [f"{p.relative_to(PACKAGE)}:{n}" for room in ("inbox", "door", "relay")
             for p in sorted((PACKAGE / room).rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if "dialect" in line]
    assert found == []


def test_no_module_of_the_package_is_over_500_lines() -> None:
    # the whole package, shells included: a room grows by a new module, not a longer one
    sources = _sources()
    assert len(sources) > 100  # the walk reads the package, not an empty folder
    long = {str(p.relative_to(PACKAGE)): n for p in sources
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
