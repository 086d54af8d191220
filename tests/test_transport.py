"""The shared HTTP server transport (``muretai_cli.transport``): what it must not depend on."""

from __future__ import annotations

import ast
from pathlib import Path

TRANSPORT = Path(__file__).resolve().parents[1] / "muretai_cli" / "transport"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_transport_imports_nothing_of_the_project_but_itself() -> None:
    # the door and the relay server both sit on it; it must not lean on either
    files = sorted(TRANSPORT.glob("*.py"))
    assert files
    for path in files:
        ours = {n for n in _imports(path) if n.split(".")[0] == "muretai_cli"}
        assert all(n.startswith("muretai_cli.transport") for n in ours), (path.name, ours)
