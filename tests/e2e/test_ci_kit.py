"""The CI kit: the pre-commit hooks' entries and every step of examples/ci/github-actions.yml,
run here as a CI would run them.

Here the hooks' `entry` commands are run directly with the arguments pre-commit would add;
tests/test_ci_precommit.py runs pre-commit itself on the documented examples.
The workflow test is slower than most (about eight real `muretai` processes and a door):
it is the one end-to-end check that the copy-paste example works.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.repo_files import ROOT, VECTORS

ORIGIN = "https://muretai.net/z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"
BIN = Path(sys.executable).parent


def _hooks() -> dict[str, str]:
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    ids = re.findall(r"^- id: (\S+)$", text, re.M)
    entries = re.findall(r"^  entry: (.+)$", text, re.M)
    assert len(ids) == len(entries)
    return dict(zip(ids, entries, strict=True))


def _run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          **kw)


def test_pre_commit_hook_entries() -> None:
    hooks = _hooks()
    assert set(hooks) == {"muretai-handoff-check", "muretai-conventions-lint"}
    results = sorted(str(p) for p in (ROOT / "examples/ci/tool-results").glob("*.json"))
    handoff = [str(BIN / "muretai"), *shlex.split(hooks["muretai-handoff-check"])[1:]]
    done = _run([*handoff, "--origin", ORIGIN, *results])
    assert done.returncode == 0, done.stdout + done.stderr
    lint = [str(BIN / "muretai"), *shlex.split(hooks["muretai-conventions-lint"])[1:]]
    done = _run([*lint, *results, str(ROOT / "examples/conventions-conforming.json")])
    assert done.returncode == 0, done.stdout + done.stderr
    done = _run([*lint, *results, str(ROOT / "examples/conventions-broken.json")])
    assert done.returncode == 1, "a broken file among several fails the hook"


def _steps(text: str) -> list[tuple[str, str]]:
    """(name, script) of each step with a ``run: |`` block."""
    steps = []
    for block in re.split(r"^      - ", text, flags=re.M)[1:]:
        name = re.match(r"name: (.+)", block)
        script = re.search(r"^        run: \|\n((?:          .*\n|\s*\n)+)", block, re.M)
        if name and script:
            lines = [line[10:] for line in script.group(1).splitlines()]
            steps.append((name.group(1), "\n".join(lines)))
    return steps


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_github_actions_example_steps_run(tmp_path: Path) -> None:
    text = (ROOT / "examples/ci/github-actions.yml").read_text()
    env_keys = set(re.findall(r"^      ([A-Z_]+): ", text, re.M))
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    if VECTORS.exists():
        (work / "vectors").symlink_to(VECTORS)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "RUNNER_TEMP": str(tmp_path),
           "MURETAI_HOME": str(tmp_path / "muretai-home"), "ORIGIN": ORIGIN,
           "RESULTS": "examples/ci/tool-results", "DOOR_PORT": str(_free_port())}
    assert env_keys <= set(env), env_keys - set(env)
    steps = _steps(text)
    names = [name for name, _ in steps]
    assert names[0] == "Install muretai" and "Site check of that door" in names
    pid_file = tmp_path / "door.pid"
    try:
        for name, script in steps[1:]:  # installing is what this checkout already did
            done = _run(["bash", "-eo", "pipefail", "-c", script], cwd=work, env=env)
            assert done.returncode == 0, (name, done.stdout, done.stderr)
            assert "::error" not in done.stdout, (name, done.stdout)
            if name == "Site check of that door":
                assert done.stdout == "", "a clean door leaves no annotation"
    finally:
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
