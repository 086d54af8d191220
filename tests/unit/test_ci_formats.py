"""--format junit|github: one renderer for verify, handoff check and conventions lint."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from muretai_cli.cli._formats import CiCase, github, junit
from muretai_cli.seam import SigningKey, sign_card_envelope
from tests.cli_helpers import run
from tests.repo_files import ROOT

EXAMPLES = ROOT / "examples"
KEY = SigningKey(bytes(range(32)))
SUPPORT = "https://muretai.net/z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"


def _xml(text: str) -> ET.Element:
    return ET.fromstring(text.split("\n", 1)[1])


def test_renderer_escapes_and_counts() -> None:
    cases = [CiCase("s", "a", "PASS"), CiCase("s", "b:c,d", "FAIL", "100%\nbad\x1b[31m"),
             CiCase("s", "c", "WARN", "hm"), CiCase("s", "d", "ERROR", "unreadable"),
             CiCase("s", "e", "INFO", "fyi")]
    root = _xml(junit(cases, name="t"))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "1")
    assert "\x1b" not in ET.tostring(root, encoding="unicode")
    lines = github(cases).splitlines()
    assert lines[0] == "::error title=s%3A b%3Ac%2Cd::100%25%0Abad?[31m"
    assert [line.split(" ", 1)[0] for line in lines] == ["::error", "::warning", "::error"]


def test_verify_card_junit_and_github(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(sign_card_envelope(KEY, {"name": "x"}, 1_800_000_000)))
    bad = tmp_path / "bad.json"
    env = sign_card_envelope(KEY, {"name": "x"}, 1_800_000_000)
    env["card"]["name"] = "y"
    bad.write_text(json.dumps(env))
    args = ("verify", "card", str(good), str(bad), "--did", KEY.did, "--now", "1800000000")
    result = run(*args, "--format", "junit")
    assert result.exit_code == 1
    cases = _xml(result.stdout).findall(".//testcase")
    assert [c.find("failure") is not None for c in cases] == [False, True]
    result = run(*args, "--format", "github")
    assert result.exit_code == 1 and len(result.stdout.splitlines()) == 1
    assert f"file={tmp_path}/bad.json".replace(":", "%3A") in result.stdout
    assert run(*args, "--format", "yaml").exit_code == 2


def test_lint_and_handoff_github() -> None:
    broken = str(EXAMPLES / "conventions-broken.json")
    result = run("conventions", "lint", broken, "--format", "github")
    assert result.exit_code == 1
    rows = [line.split(" ", 1)[0] for line in result.stdout.splitlines()]
    assert rows == ["::error", "::error"]  # the result's row and the summary row
    result = run("conventions", "lint", str(EXAMPLES / "conventions-conforming.json"),
                 "--format", "junit")
    assert result.exit_code == 0 and _xml(result.stdout).get("failures") == "0"
    result = run("handoff", "check", str(EXAMPLES / "ci/tool-results/support.json"),
                 "--origin", SUPPORT, "--offline", "--format", "junit")
    root = _xml(result.stdout)
    assert result.exit_code == 0 and root.get("tests") == "1" and root.get("failures") == "0"
    result = run("handoff", "check", str(EXAMPLES / "ci/tool-results/support.json"),
                 "--origin", "https://muretai.net/" + KEY.did.rsplit(":", 1)[1][:-1] + "x",
                 "--offline", "--format", "github")
    assert result.exit_code in (1, 2) and result.stdout.startswith("::error ")
