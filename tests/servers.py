"""Servers for tests, in a thread or in their own process, always stopped.

    with serve_asgi(app) as base_url:
        httpx.get(base_url + "/...")

``serve_asgi`` runs an ASGI app under a real uvicorn on 127.0.0.1, on an ephemeral port, in a
thread; ``run_uvicorn`` is the same for a caller that brings its own ``uvicorn.Config`` and
bound socket (the door's tests do). ``start_serve`` / ``start_relay`` / ``start_muretai``
start a real ``muretai serve`` or ``relay serve`` process (stderr to a file, so a chatty
server never blocks on a full pipe); ``running`` waits until it answers and stops it after.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from muretai_cli.transport.children import listening_port, muretai_argv, stop
from tests.repo_files import ROOT
from tests.waiting import wait_until  # the suite's one wait, here too for older imports

__all__ = [
    "READY_PATHS",
    "RELAY_ORIGIN",
    "ROOT",
    "ServeProc",
    "children_of",
    "race",
    "refused_origin",
    "run_uvicorn",
    "running",
    "serve_asgi",
    "start_many",
    "start_muretai",
    "start_relay",
    "start_serve",
    "stop_all",
    "wait_until",
]

READY_PATHS = {"serve": "/.well-known/agent-card.json", "relay": "/card/did:key:z"}


@contextmanager
def run_uvicorn(config: uvicorn.Config, sock: socket.socket) -> Iterator[None]:
    """Start ``config`` on ``sock`` in a thread; stop it (and close ``sock``) on exit."""
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), "uvicorn started", timeout=10,
               interval=0.01)
    if not server.started:
        raise RuntimeError("uvicorn did not start")
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def refused_origin() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` where a connection is refused for as long as the block runs.

    The port stays bound (never listening), so no other test's server can take it meanwhile:
    a port closed and handed on would race every parallel worker that binds port 0."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def serve_asgi(app: Any, *, host: str = "127.0.0.1", **config: Any) -> Iterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    with run_uvicorn(uvicorn.Config(app, log_level="warning", lifespan="on", **config), sock):
        yield f"http://{host}:{port}"



@dataclass
class ServeProc:
    """A ``muretai`` server process: ``base`` is where it listens once it said so."""

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
                port = listening_port(self.log.read_bytes())
                if port is not None:
                    self.base = f"http://127.0.0.1:{port}"
            if self.base:
                try:
                    if httpx.get(self.base + self.ready_path, timeout=2).status_code < 500:
                        return self
                except httpx.TransportError:
                    pass
            time.sleep(0.05)
        raise RuntimeError(f"serve did not answer in time: {self.log.read_text()}")

    def rpc(self, body: dict[str, Any], client: httpx.Client | None = None) -> dict[str, Any]:
        resp = (client or httpx).post(self.base + "/", json=body, timeout=15)
        doc: dict[str, Any] = resp.json()
        doc["_status"] = resp.status_code
        return doc

    def stop(self) -> None:
        stop(self.proc)


def start_muretai(tmp: Path, *argv: str, kind: str = "serve", tag: str = "",
                  stdout: Path | None = None) -> ServeProc:
    """``python -m muretai_cli ARGV`` in the background: stderr to a log file in ``tmp``,
    stdout to ``stdout`` (default: discarded)."""
    log = tmp / f"{kind}{tag}-{time.monotonic_ns()}.log"
    proc = subprocess.Popen(muretai_argv(*argv),
                            stdout=stdout.open("wb") if stdout else subprocess.DEVNULL,
                            stderr=log.open("wb"), cwd=ROOT, env=os.environ.copy())
    return ServeProc(proc, log, ready_path=READY_PATHS[kind])


def start_serve(tmp: Path, name: str, *args: str, tag: str = "",
                stdout: Path | None = None) -> ServeProc:
    """``muretai serve --as NAME --url http://127.0.0.1:1 --port 0 ARGS`` (a later --url in
    ARGS wins)."""
    return start_muretai(tmp, "serve", "--as", name, "--url", "http://127.0.0.1:1", "--port",
                         "0", *args, tag=f"-{name}{tag}", stdout=stdout)


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


RELAY_ORIGIN = "http://127.0.0.1:1"  # what start_relay's --url makes the tokens name


def start_relay(tmp: Path, *args: str, tag: str = "") -> ServeProc:
    """``muretai relay serve --url http://127.0.0.1:1 --port 0 ARGS`` (a later --url wins)."""
    return start_muretai(tmp, "relay", "serve", "--url", RELAY_ORIGIN, "--port", "0",
                         *args, kind="relay", tag=tag)


@contextmanager
def running(server: ServeProc) -> Iterator[ServeProc]:
    """``server`` once it answers; stopped when the block ends (if still running)."""
    try:
        yield server.wait_ready()
    finally:
        server.stop()


def race(calls: Sequence[Callable[..., Any]]) -> list[Any]:
    """Call each of ``calls`` in a thread of its own, all let go at once: their results."""
    out: list[Any] = [None] * len(calls)
    gate = threading.Barrier(len(calls))

    def go(i: int) -> None:
        gate.wait()
        out[i] = calls[i]()

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def stop_all(procs: list[ServeProc]) -> None:
    """Stop every one of ``procs``."""
    for p in procs:
        p.stop()


def children_of(pid: int) -> set[int]:
    """The process ids of ``pid``'s children (from /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.update(int(c) for c in text)
    return found
