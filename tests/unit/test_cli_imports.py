"""Issue 19 §3: the command line has no import circle, lazy imports included, and "who am I
acting as" is one module that imports no command module (it was ``_op``, imported back by
the commands ``_op`` itself imports: ``_door``, ``_opconv``, ``_opdoor``, ``_opvisit``)."""

from __future__ import annotations

import ast
from pathlib import Path

import muretai_cli.cli

CLI = Path(muretai_cli.cli.__file__).parent
PREFIX = "muretai_cli.cli."


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(CLI.glob("*.py")):
        name = "muretai_cli.cli" if path.stem == "__init__" else PREFIX + path.stem
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):  # every import, top-level or lazy
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith(PREFIX):
                    found.add(node.module)
                elif node.module == "muretai_cli.cli":
                    found |= {PREFIX + a.name for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith(PREFIX)}
        graph[name] = found - {name}
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle, as the path that closes it; [] when there is none."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_the_command_line_has_no_import_circle() -> None:
    graph = _graph()
    assert PREFIX + "_acting" in graph and len(graph) > 20
    assert _circle(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_who_am_i_acting_as_imports_no_command_module() -> None:
    commands = {m for m in _graph() if m != "muretai_cli.cli"} - {
        PREFIX + m for m in ("_text", "_tree")}
    assert _graph()[PREFIX + "_acting"] & commands == set()
    for module in ("_door", "_opconv", "_opdoor", "_opvisit"):
        assert PREFIX + "_op" not in _graph()[PREFIX + module], module
