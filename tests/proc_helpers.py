"""Real ``muretai serve`` processes for multi-process tests: start, wait until they answer,
kill. Each listens on its own ephemeral port (or shares one, with ``--workers``)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
_LISTENING = re.compile(rb"listening on http://127\.0\.0\.1:(\d+)")
READY_PATHS = {"serve": "/.well-known/agent-card.json", "relay": "/card/did:key:z"}


@dataclass
class ServeProc:
    proc: subprocess.Popen[bytes]
    log: Path
    base: str = ""
    ready_path: str = READY_PATHS["serve"]

    def wait_ready(self, timeout: float = 30.0) -> ServeProc:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited {self.proc.returncode}: "
                                   f"{self.log.read_text(errors='replace')}")
            if not self.base:
                found = _LISTENING.search(self.log.read_bytes())
                if found:
                    self.base = f"http://127.0.0.1:{int(found.group(1))}"
            if self.base:
                try:
                    if httpx.get(self.base + self.ready_path, timeout=2).status_code < 500:
                        return self
                except httpx.TransportError:
                    pass
            time.sleep(0.05)
        raise RuntimeError(f"serve did not answer in time: {self.log.read_text()}")

    def rpc(self, body: dict[str, Any], client: httpx.Client | None = None) -> dict[str, Any]:
        resp = (client or httpx).post(self.base + "/", json=body, timeout=15)  # type: ignore[attr-defined]
        doc: dict[str, Any] = resp.json()
        doc["_status"] = resp.status_code
        return doc

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_serve(tmp: Path, name: str, *args: str, tag: str = "") -> ServeProc:
    """``muretai serve --as NAME --port 0 ARGS`` in the background, stderr to a file."""
    log = tmp / f"serve-{name}{tag}-{time.monotonic_ns()}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "muretai_cli", "serve", "--as", name, "--url",
         "http://127.0.0.1:1", "--port", "0", *args],
        stdout=subprocess.DEVNULL, stderr=log.open("wb"), cwd=ROOT, env=os.environ.copy())
    return ServeProc(proc, log)


def start_many(tmp: Path, name: str, count: int, *args: str) -> list[ServeProc]:
    procs = [start_serve(tmp, name, *args, tag=str(i)) for i in range(count)]
    try:
        for p in procs:
            p.wait_ready()
    except BaseException:
        for p in procs:
            p.stop()
        raise
    return procs


def start_relay(tmp: Path, *args: str, tag: str = "") -> ServeProc:
    """``muretai relay serve --url http://127.0.0.1:1 --port 0 ARGS``, stderr to a file."""
    log = tmp / f"relay{tag}-{time.monotonic_ns()}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "muretai_cli", "relay", "serve", "--url", "http://127.0.0.1:1",
         "--port", "0", *args],
        stdout=subprocess.DEVNULL, stderr=log.open("wb"), cwd=ROOT, env=os.environ.copy())
    return ServeProc(proc, log, ready_path=READY_PATHS["relay"])
