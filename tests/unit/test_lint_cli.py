"""`muretai conventions lint` through typer's CliRunner: exit codes, text and --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from muretai_cli.cli import app
from tests.repo_files import ROOT

GATE = {"ok": False, "needsHumanConfirmation": True, "origin": "https://a.example",
        "requestId": "req-1", "message": "Please confirm.", "agentHint": "Wait for them."}
WARN_ONLY = {**GATE, "message": "Assistant: please confirm."}
BAD = {**GATE, "ok": True}
EXAMPLES = ROOT / "examples"


def lint(*args: str, input: bytes | None = None) -> Result:
    return CliRunner().invoke(app, ["conventions", "lint", *args], input=input,
                              catch_exceptions=False)


def lint_json(*args: str, input: bytes | None = None) -> tuple[int, dict[str, Any]]:
    result = lint(*args, "--json", input=input)
    doc = json.loads(result.stdout)
    assert next(iter(doc)) == "ok"
    return result.exit_code, doc


def write(tmp_path: Path, name: str, *docs: Any) -> str:
    path = tmp_path / name
    path.write_text("\n".join(d if isinstance(d, str) else json.dumps(d) for d in docs) + "\n")
    return str(path)


def test_exit_codes(tmp_path: Path) -> None:
    assert lint(write(tmp_path, "good.json", GATE)).exit_code == 0
    assert lint(write(tmp_path, "bad.json", BAD)).exit_code == 1
    warn = write(tmp_path, "warn.json", WARN_ONLY)
    assert lint(warn).exit_code == 0
    assert lint(warn, "--strict").exit_code == 1
    assert lint(str(tmp_path / "missing.jsonl")).exit_code == 2
    assert lint(warn, "--tools", str(tmp_path / "missing.json")).exit_code == 2
    assert lint(warn, "--view", "nobody").exit_code == 2


def test_missing_file_in_json_mode(tmp_path: Path) -> None:
    code, doc = lint_json(str(tmp_path / "missing.jsonl"))
    assert (code, doc["ok"], doc["error"]) == (2, False, "no-such-file")


def test_json_lists_only_results_with_findings(tmp_path: Path) -> None:
    path = write(tmp_path, "mixed.jsonl", GATE, BAD, "{broken", WARN_ONLY)
    code, doc = lint_json(path)
    assert code == 1 and doc["ok"] is False and doc["mode"] == "jsonl"
    assert [(r["index"], r["line"]) for r in doc["results"]] == [(1, 2), (2, 3), (3, 4)]
    assert doc["results"][1]["findings"][0]["rule"] == "invalid-json"
    summary = doc["summary"]
    assert (summary["results"], summary["withFindings"], summary["errors"],
            summary["warnings"]) == (4, 3, 2, 1)
    assert summary["rules"] == {"invalid-json": 1, "message-instruction-like": 1,
                                "ok-true-with-gate": 1}
    assert "levels" not in doc


def test_text_mode_streams_findings_and_a_summary(tmp_path: Path) -> None:
    result = lint(write(tmp_path, "mixed.jsonl", GATE, BAD, "{broken"))
    out = result.stdout
    assert "result 1 (line 2)" in out and "ok-true-with-gate" in out
    assert "result 2 (line 3)" in out and "invalid-json" in out
    assert "result 0" not in out
    assert "Findings by rule" in out
    assert out.rstrip().splitlines()[-1].startswith("FAIL: 3 result(s) linted (jsonl)")
    assert result.stderr == ""


def test_stdin_and_untrusted_text_is_made_safe() -> None:
    hostile = {**GATE, "origin": "https://a.example/\u202etxt.exe\u2066"}
    result = lint("-", input=json.dumps(hostile).encode())
    assert result.exit_code == 1 and "origin-not-bare" in result.stdout
    assert "\u202e" not in result.stdout and "\u2066" not in result.stdout
    _, doc = lint_json("-", input=json.dumps(hostile).encode())
    detail = doc["results"][0]["findings"][0]["detail"]
    assert "txt.exe" in detail and "\u202e" not in detail


def test_level_report_in_json(tmp_path: Path) -> None:
    tools = write(tmp_path, "tools.json", [{"name": n} for n in (
        "get_conversation", "send_message", "provide_context")])
    code, doc = lint_json(write(tmp_path, "good.json", GATE), "--tools", tools)
    assert code == 0
    assert (doc["levels"]["level"], doc["levels"]["interoperates"]) == (3, True)
    assert doc["levels"]["next"]["needs"] == ["the await_reply tool"]
    code, doc = lint_json(write(tmp_path, "plain.json", {"content": []}), "--tools", tools)
    assert (code, doc["levels"]["level"], doc["levels"]["interoperates"]) == (0, 2, False)
    code, doc = lint_json(write(tmp_path, "plain.json", {"content": []}), "--tools", tools,
                          "--gated")
    assert (doc["levels"]["level"], doc["levels"]["interoperates"]) == (3, True)


def test_site_agent_view_exposing_a_visitor_tool_fails(tmp_path: Path) -> None:
    tools = write(tmp_path, "agent.json", [{"name": "lookup"}, {"name": "send_message"}])
    code, doc = lint_json(write(tmp_path, "good.json", GATE), "--tools", tools,
                          "--view", "site-agent")
    assert code == 1 and doc["ok"] is False
    assert [f["rule"] for f in doc["levels"]["findings"]] == ["view-forbidden-tool"]
    result = lint(write(tmp_path, "good.json", GATE), "--tools", tools, "--view", "site-agent")
    assert result.exit_code == 1 and "view-forbidden-tool" in result.stdout


@pytest.mark.parametrize(("name", "code"), [("conventions-conforming.json", 0), ("conventions-broken.json", 1)])
def test_the_examples(name: str, code: int) -> None:
    result = lint(str(EXAMPLES / name), "--tools", str(EXAMPLES / "conventions-tools.json"))
    assert result.exit_code == code, result.stdout


def test_several_files_as_pre_commit_passes_them(tmp_path: Path) -> None:
    good = write(tmp_path, "good.json", GATE)
    bad = write(tmp_path, "bad.json", BAD)
    assert lint(good, good).exit_code == 0
    result = lint(good, bad)
    assert result.exit_code == 1
    assert f"== {good}" in result.stdout and f"== {bad}" in result.stdout
    code, doc = lint_json(good, bad)
    assert code == 1 and doc["inputs"] == [good, bad] and doc["summary"]["results"] == 2
    assert [r["input"] for r in doc["results"]] == [bad]
    finding = doc["results"][0]["findings"][0]
    assert finding["code"] == finding["rule"] and finding["message"] == finding["detail"]
    assert doc["summary"]["withFindings"] == 1 and "with_findings" not in doc["summary"]
    empty = write(tmp_path, "empty.json", "")
    assert lint(good, empty).exit_code == 2, "an empty file among several still fails"
