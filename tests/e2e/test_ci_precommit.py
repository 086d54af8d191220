"""pre-commit itself runs the CI kit's documented examples as they are written (issue 22, 11).

The snippet in docs/ci.md and the one in the comment of .pre-commit-hooks.yaml are taken from
those files, each put in a scratch git repository with the files its `args` name, and
`pre-commit run --all-files` runs there, offline: the hooks are declared `repo: local` with
`language: system` (a `language: python` hook would make pre-commit install muretai from a
registry), each hook otherwise exactly as .pre-commit-hooks.yaml declares it, the snippet's
own keys (`args`, `files`) over it, as pre-commit merges a configuration over a hook.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_helpers import new_identity, run
from tests.repo_files import ROOT

BIN = Path(sys.executable).parent
SHOP = "https://shop.example"


def _docs_snippet() -> str:
    text = (ROOT / "docs/ci.md").read_text()
    section = text[text.index("## pre-commit"):text.index("## GitHub Actions")]
    return str(re.findall(r"```yaml\n(.*?)```", section, re.S)[0])


def _comment_snippet() -> str:
    lines = (ROOT / ".pre-commit-hooks.yaml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "pre-commit-config.yaml" in line) + 1
    block = []
    for line in lines[start:]:
        if not line.startswith("#"):
            break
        block.append(line[1:])
    return textwrap.dedent("\n".join(block).split("\n\n# Both")[0].split("\n Both")[0])


SNIPPETS = {"docs/ci.md": _docs_snippet, ".pre-commit-hooks.yaml comment": _comment_snippet}


def _local_config(snippet: str) -> dict[str, Any]:
    published = {hook["id"]: hook for hook in
                 yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    repos = yaml.safe_load(snippet)
    assert isinstance(repos, list) and len(repos) == 1, snippet
    hooks = [{**published[hook["id"]], **hook, "language": "system"}
             for hook in repos[0]["hooks"]]
    assert {h["id"] for h in hooks} == set(published), "the snippet names every hook"
    return {"repos": [{"repo": "local", "hooks": hooks}]}


def _git(repo: Path, *argv: str) -> None:
    subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)


def _pre_commit(repo: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PRE_COMMIT_HOME": str(tmp / "pre-commit-home"), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run([str(BIN / "pre-commit"), "run", "--all-files", "--color", "never"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.parametrize("where", sorted(SNIPPETS))
def test_the_documented_pre_commit_example_runs_as_written(where: str, tmp_path: Path) -> None:
    snippet = SNIPPETS[where]()
    args = yaml.safe_load(snippet)[0]["hooks"][0]["args"]
    assert args[args.index("--origin") + 1] == SHOP
    card_path = args[args.index("--card") + 1]
    repo = tmp_path / "repo"
    (repo / "tool-results").mkdir(parents=True)
    shop = new_identity("shop")
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"did": shop, "url": SHOP, "name": "Shop"}))
    signed = run("sign", "card", str(card), "--as", "shop")
    assert signed.exit_code == 0, signed.stderr
    (repo / card_path).parent.mkdir(parents=True, exist_ok=True)
    (repo / card_path).write_text(signed.stdout)
    support = json.loads((ROOT / "examples/ci/tool-results/support.json").read_text())
    support["_meta"]["handoff"]["next"][0]["to"] = shop
    (repo / "tool-results/support.json").write_text(json.dumps(support))
    (repo / "tool-results/shipped.json").write_text(json.dumps({   # carries no handoff
        "content": [{"type": "text", "text": "Your order shipped."}],
        "structuredContent": {"ok": True, "order": "A-1"}}))
    (repo / "package.json").write_text('{"name": "not a tool result"}')  # left out by files
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(_local_config(snippet)))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    done = _pre_commit(repo, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("Passed") == 2, done.stdout
    broken = repo / "tool-results/broken.json"
    broken.write_text((ROOT / "examples/conventions-broken.json").read_text())
    _git(repo, "add", "-A")
    done = _pre_commit(repo, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("Failed") == 2 and "exit code: 1" in done.stdout, done.stdout
