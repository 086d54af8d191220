"""Child processes that run muretai (a door, a relay, a command): started the one way,
their port read from what they say, stopped the one way. Used by the demo, the benches and
the tests' server helpers, so each does not carry its own copy.

    muretai_argv(*args)   the argv of ``python -m muretai_cli ARGS`` in this interpreter
    LISTENING             what a server says once bound: ``listening on http://HOST:PORT``
    listening_port(text)  the port in that line, or None
    read_port(stream)     read a server's stderr up to that line: its port (None: it ended)
    stop(proc)            SIGTERM, a grace period, then SIGKILL; always reaped
    kill(proc)            SIGKILL and reap, at once (a child that must not outlive a block)
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import IO, Any

__all__ = ["LISTENING", "kill", "listening_port", "muretai_argv", "read_port", "stop"]

# ``serve`` says "listening on http://…", ``relay serve`` "relay listening on http://…"
LISTENING = re.compile(rb"listening on http://(?:\[[^\]]*\]|[^\s:/]+):(\d+)")
STOP_GRACE = 10.0  # seconds a server is given to end on SIGTERM before it is killed


def muretai_argv(*args: str) -> list[str]:
    """``python -m muretai_cli ARGS`` with this interpreter: the CLI as a user runs it."""
    return [sys.executable, "-m", "muretai_cli", *args]


def listening_port(text: bytes | str) -> int | None:
    """The port a server named in ``text`` (a line or a whole log), or None."""
    found = LISTENING.search(text.encode() if isinstance(text, str) else text)
    return int(found.group(1)) if found else None


def read_port(stream: IO[bytes]) -> int | None:
    """Read ``stream`` (a server's stderr) line by line up to the line saying where it
    listens; its port, or None when the stream ended first (the server did not start)."""
    for line in iter(stream.readline, b""):
        port = listening_port(line)
        if port is not None:
            return port
    return None


def stop(proc: subprocess.Popen[Any], *, grace: float = STOP_GRACE) -> int:
    """End ``proc``: SIGTERM (a server stops cleanly), SIGKILL after ``grace`` seconds;
    reaped either way. Its exit code (negative: the signal that ended it)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def kill(proc: subprocess.Popen[Any]) -> None:
    """End ``proc`` at once (SIGKILL) and reap it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
