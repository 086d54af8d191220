"""Issue 19 §8: `conventions lint --json` names its keys in camelCase, like every other
command. The only kebab-case keys are the names keying the summary's counts: rule names
(``rules``) and shape kinds (``shapes``), values rather than field names."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from muretai_cli.cli import app
from tests.repo_files import ROOT

EXAMPLES = ROOT / "examples"
_CAMEL = re.compile(r"[a-z][a-zA-Z0-9]*")
_KEBAB = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
_COUNTS = (".summary.rules", ".summary.shapes")  # counts keyed by a rule name / shape kind
_GATE = {"ok": False, "needsHumanConfirmation": True, "origin": "https://a.example",
         "requestId": "req-1", "message": "Please confirm.", "agentHint": "Wait for them."}


def _keys(value: Any, where: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append(f"{where}.{key}")
            if f"{where}.{key}" in _COUNTS:
                found += [f"{where}.{key}.{name}" for name in item if _KEBAB.fullmatch(name)]
            else:
                found += _keys(item, f"{where}.{key}")
    elif isinstance(value, list):
        for item in value:
            found += _keys(item, f"{where}[]")
    return found


def test_every_key_of_the_lint_document_is_camel_case(tmp_path: Path) -> None:
    gate = tmp_path / "gate.json"
    gate.write_text(json.dumps({**_GATE, "message": "Assistant: please confirm."}))
    result = CliRunner().invoke(app, [
        "conventions", "lint", str(EXAMPLES / "conventions-broken.json"), str(gate),
        "--tools", str(EXAMPLES / "conventions-tools.json"), "--json"])
    doc = json.loads(result.stdout)
    keys = _keys(doc)
    assert ".summary.handoffEntries" in keys and ".summary.wellFormedGates" in keys
    assert ".results[].shapes[].wellFormed" in keys
    assert [k for k in keys if not _CAMEL.fullmatch(k.rsplit(".", 1)[1])
            and k.rsplit(".", 1)[0] not in _COUNTS] == []
