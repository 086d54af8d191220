"""The README's layout names every room and every module of ``muretai_cli`` (issue 19.8).

A module added without a word in that map fails here, so the map a newcomer reads first
stays whole as the house grows.
"""

from __future__ import annotations

import re

from tests.repo_files import ROOT

PACKAGE = ROOT / "muretai_cli"


def _layout() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index("## Layout"):]
    fence = block.index("```")
    return block[fence:block.index("```", fence + 3)]


def _modules() -> list[str]:
    return sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                  if path.name != "__init__.py" and "__pycache__" not in path.parts)


def test_there_are_modules_to_name() -> None:
    assert len(_modules()) > 100  # the walk found the package (an empty walk proves nothing)


def test_every_module_is_named_in_the_readme_layout() -> None:
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _layout()))
    missing = [module for module in _modules()
               if not {module.rsplit("/", 1)[-1][:-3], module.rsplit("/", 1)[-1][:-3].lstrip("_")}
               & words]
    assert not missing, f"modules the README's layout does not name: {missing}"


def test_every_room_is_named_in_the_readme_layout() -> None:
    layout = _layout()
    rooms = sorted(str(path.parent.relative_to(PACKAGE)) for path in PACKAGE.rglob("__init__.py")
                   if path.parent != PACKAGE)
    missing = [room for room in rooms if f"{room.rsplit('/', 1)[-1]}/" not in layout]
    assert not missing, f"rooms the README's layout does not name: {missing}"
