"""The suite's own house rules, checked on its source: no test module imports another (shared
code lives in the helper modules at tests/), one wait-until (tests.waiting), and paths
from tests.repo_files.ROOT, not counted from a test file's own place (a file moved into
tests/unit or tests/e2e would silently look one folder too deep)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.repo_files import ROOT

TESTS = ROOT / "tests"


def _modules() -> list[Path]:
    found = sorted(TESTS.rglob("*.py"))
    assert len(found) > 20, found  # the suite is there: an empty glob cannot pass
    return found


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_no_test_module_imports_another() -> None:
    test_module = re.compile(r"^tests(\.(unit|e2e))?\.(test_\w+|conftest)$")
    offenders = {str(path.relative_to(ROOT)): sorted(n for n in _imported(path)
                                                     if test_module.match(n))
                 for path in _modules()}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_one_wait_until() -> None:
    copy = re.compile(r"^\s*(async )?def _?(wait_until|until|wait_for|eventually)\b", re.M)
    copies = [str(p.relative_to(ROOT)) for p in _modules()
              if p.name != "waiting.py" and copy.search(p.read_text())]
    assert copies == [], "use tests.waiting.wait_until"


def test_paths_come_from_the_repository_root() -> None:
    own_place = "Path(" + "__file__)"  # (spelt in two, or this file would find itself)
    counted = [str(p.relative_to(ROOT)) for p in _modules()
               if p.name != "repo_files.py" and own_place in p.read_text()]
    assert counted == [], "take ROOT from tests.repo_files"
