"""The README's first command: the demo runs the main job end to end and every step holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_demo_passes_end_to_end(tmp_path: Path) -> None:
    env = {**os.environ, "MURETAI_HOME": str(tmp_path / "unused"), "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "muretai_cli", "demo", "--home",
                           str(tmp_path / "demo")], capture_output=True, text=True, env=env,
                          timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "demo passed" in proc.stdout
    # The door's first contact was held, then approved; the inbox holds all three DMs.
    assert "exit 4 (expected 4) ok" in proc.stdout
    assert proc.stdout.count("UNEXPECTED") == 0
    assert "See you on Friday." in proc.stdout
