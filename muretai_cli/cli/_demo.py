"""``muretai demo``: the main job end to end, on loopback, in a throwaway home.

Every step runs the real ``muretai`` command line in a subprocess (so the demo exercises
exactly what a user types) and checks its exit code. It exits 0 only if every step did.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

from muretai_cli.cli._out import note, say


@dataclass
class Demo:
    home: Path
    steps: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "MURETAI_KEYS"}
        env["MURETAI_HOME"] = str(self.home)
        env.setdefault("NO_COLOR", "1")
        return env

    def run(self, title: str, *args: str, expect: int = 0, stdin: str | None = None,
            show: bool = True) -> subprocess.CompletedProcess[str]:
        self.steps += 1
        say(f"\n[{self.steps}] {title}")
        say(f"    $ muretai {' '.join(shlex.quote(a) for a in args)}")
        # Our own CLI under our own interpreter, arguments as a list: no shell involved.
        proc = subprocess.run([sys.executable, "-m", "muretai_cli", *args], input=stdin,  # noqa: S603
                              capture_output=True, text=True, env=self.env, timeout=120,
                              check=False)
        if show:
            for line in (proc.stdout.strip() or proc.stderr.strip()).splitlines()[:14]:
                say(f"    {line}")
        mark = "ok" if proc.returncode == expect else "UNEXPECTED"
        say(f"    -> exit {proc.returncode} (expected {expect}) {mark}")
        if proc.returncode != expect:
            self.failures.append(f"step {self.steps} ({title}): exit {proc.returncode}, "
                                 f"expected {expect}: {proc.stderr.strip()[:300]}")
        return proc

    def did_of(self, name: str) -> str:
        proc = self.run(f"show {name}'s identity", "id", "show", name, "--json", show=False)
        return str(json.loads(proc.stdout)["did"])


def offline_part(demo: Demo) -> None:
    demo.run("create the door's identity", "id", "new", "shop")
    demo.run("create the visitor's identity", "id", "new", "alice")
    shop = demo.did_of("shop")
    demo.run("resolve the door's did:key offline", "did", "resolve", shop, show=False)
    signed = demo.run("alice signs a message to the shop", "sign", "message", "--as", "alice",
                      "--to", shop, "hello from alice", show=False)
    demo.run("the shop verifies it", "verify", "message", "-", "--to", shop,
             stdin=signed.stdout)
    tampered = signed.stdout.replace("hello from alice", "hello from mallory")
    demo.run("a tampered copy is refused", "verify", "message", "-", "--to", shop,
             stdin=tampered, expect=1)


def demo(
    home: Annotated[Path | None, typer.Option(
        "--home", help="Use this folder as MURETAI_HOME (default: a new temporary one).")] = None,
) -> None:
    """Run the main job end to end on loopback, in a throwaway home, and check every step."""
    root = home or Path(tempfile.mkdtemp(prefix="muretai-demo-"))
    note(f"demo home: {root}")
    run = Demo(root)
    offline_part(run)
    if run.failures:
        say(f"\ndemo FAILED: {len(run.failures)} of {run.steps} steps")
        for failure in run.failures:
            say(f"  - {failure}")
        raise typer.Exit(1)
    say(f"\ndemo passed: {run.steps} steps")
