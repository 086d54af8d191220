"""Issue 19 §3: serving is the library's (``door.serve``, ``relay.serve`` on one
``transport.serve.serve_workers``), not the CLI's; one helper for child processes
(``transport.children``), used by the demo, the benches and ``tests.servers``."""

from __future__ import annotations

import ast
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

import muretai_cli
from muretai_cli.errors import InputError
from muretai_cli.transport.children import listening_port, muretai_argv, read_port, stop
from muretai_cli.transport.serve import Limits, Listening, serve_workers

PACKAGE = Path(muretai_cli.__file__).parent
ROOT = PACKAGE.parent
WIRING = ("uvicorn", "muretai_cli.transport.server", "muretai_cli.transport.workers")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_the_cli_does_not_wire_a_server() -> None:
    wired = {f"{path.name}: {name}" for path in sorted((PACKAGE / "cli").glob("*.py"))
             for name in _imports(path) if name.startswith(WIRING)}
    assert wired == set()
    for room in ("door", "relay"):
        assert "muretai_cli.transport.serve" in _imports(PACKAGE / room / "serve.py"), room


def test_a_port_in_use_is_cannot_bind_and_what_the_caller_holds_is_closed() -> None:
    told: list[Listening] = []
    closed: list[bool] = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]

        def app_for(_: int) -> Any:
            raise AssertionError("no app is built for a port that cannot be bound")

        with pytest.raises(InputError) as info:
            serve_workers(app_for, host="127.0.0.1", port=port, workers=1, limits=Limits(),
                          on_listening=told.append, before_fork=lambda: closed.append(True))
    assert info.value.code == "cannot-bind" and str(port) in info.value.detail
    assert closed == [True] and told == []


def test_where_a_server_listens_reads_as_one_address() -> None:
    assert Listening("127.0.0.1", 8788, 1).address == "http://127.0.0.1:8788"
    assert Listening("::1", 8788, 2).address == "http://[::1]:8788"
    assert listening_port(b"relay listening on http://[::1]:8790 for ...") == 8790
    assert listening_port("listening on http://127.0.0.1:41 as did:key:z") == 41
    assert listening_port("no port here") is None


def test_a_real_relay_s_port_is_read_from_what_it_says_and_sigterm_stops_it(
        tmp_path: Path) -> None:
    proc = subprocess.Popen(muretai_argv("relay", "serve", "--url", "http://127.0.0.1:1",
                                         "--port", "0", "--db", str(tmp_path / "r.sqlite3")),
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, cwd=ROOT)
    try:
        assert proc.stderr is not None
        port = read_port(proc.stderr)
        assert port is not None
        assert httpx.get(f"http://127.0.0.1:{port}/card/did:key:z", timeout=10).status_code == 404
    finally:
        code = stop(proc)
    assert code == -signal.SIGTERM and proc.poll() is not None


def test_stop_kills_a_child_that_ignores_sigterm() -> None:
    proc = subprocess.Popen([sys.executable, "-c", (
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('listening on http://127.0.0.1:9', file=sys.stderr, flush=True); "
        "time.sleep(60)")], stderr=subprocess.PIPE)
    assert proc.stderr is not None
    assert read_port(proc.stderr) == 9  # it ignores SIGTERM from now on
    assert stop(proc, grace=0.2) == -signal.SIGKILL


def test_read_port_is_none_when_the_server_ends_without_saying() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stderr.write('no\\n')"],
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    assert read_port(proc.stderr) is None
    proc.wait()
