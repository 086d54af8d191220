"""The shared HTTP server transport (``muretai_cli.transport``): what it must not depend on."""

from __future__ import annotations

import ast
import select
import socket
import threading
import time
from pathlib import Path

import pytest

from muretai_cli.seam import SigningKey
from muretai_cli.transport.server import EVICT_IDLE_AFTER
from tests.door_helpers import live_door, raw_socket, send_request
from tests.repo_files import ROOT

try:
    import httptools  # noqa: F401

    PROTOCOLS = ["h11", "httptools"]
except ImportError:  # pragma: no cover
    PROTOCOLS = ["h11"]

TRANSPORT = ROOT / "muretai_cli" / "transport"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_transport_imports_only_itself_and_the_error_family() -> None:
    # the door and the relay server both sit on it; it must not lean on either. The one
    # other module it may use is the error family, which itself imports nothing of the
    # project (every layer may raise it: DESIGN.md), so nothing reaches up through it.
    errors = {n for n in _imports(ROOT / "muretai_cli" / "errors.py")
              if n.split(".")[0] == "muretai_cli"}
    assert errors == set(), errors
    files = sorted(TRANSPORT.glob("*.py"))
    assert files
    for path in files:
        ours = {n for n in _imports(path) if n.split(".")[0] == "muretai_cli"}
        assert all(n.startswith("muretai_cli.transport") or n == "muretai_cli.errors"
                   for n in ours), (path.name, ours)


# --- admission: idle sockets cannot close the door (small limits show the same rules) ---

FLOOD = "127.0.0.2"  # the whole of 127/8 is loopback: the flood comes from another address


def _connect(origin: str, source: str = FLOOD) -> socket.socket:
    return raw_socket(origin, source=source)


def _closed_within(conn: socket.socket, seconds: float) -> bytes | None:
    """What the server wrote before closing ``conn`` within ``seconds`` (None: still open)."""
    conn.settimeout(seconds)
    data = b""
    try:
        while chunk := conn.recv(4096):
            data += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return data


def _wait_until_closed(conns: list[socket.socket], count: int, within: float = 10) -> None:
    """Wait (on the sockets, not a clock) until the server has closed ``count`` of ``conns``."""
    closed: set[int] = set()
    deadline = time.monotonic() + within
    while len(closed) < count:
        left = deadline - time.monotonic()
        assert left > 0, f"only {len(closed)} of {count} sockets were closed"
        ready, _, _ = select.select([c for i, c in enumerate(conns) if i not in closed],
                                    [], [], left)
        for conn in ready:
            if _closed_within(conn, 0.5) is not None:
                closed.add(conns.index(conn))


@pytest.mark.parametrize("http", PROTOCOLS)
def test_idle_connections_at_the_limit_do_not_refuse_a_signed_message(http: str) -> None:
    with live_door("open", http=http, max_connections=20, max_per_client=0) as door:
        idle = [_connect(door.origin) for _ in range(40)]  # twice the limit, all silent
        try:
            # the door has taken in every one of them (20 are closed: refused or evicted),
            # then its oldest admitted socket has been idle long enough to be evicted
            _wait_until_closed(idle, 20)
            time.sleep(EVICT_IDLE_AFTER + 0.1)
            doc = door.rpc(send_request(SigningKey.generate(), door.did))
            assert doc["_status"] == 200 and "result" in doc, doc
            # the newcomer took the place of the longest-idle one: the first is closed
            assert _closed_within(idle[0], 2) is not None
        finally:
            for conn in idle:
                conn.close()


def test_reconnecting_flood_does_not_refuse_a_signed_message() -> None:
    # one address reconnecting without pause: the per-client cap keeps it to its share
    with live_door("open", max_connections=20, max_per_client=10) as door:
        stop = threading.Event()
        opened = [0]

        def flood() -> None:  # keeps 30 sockets open, reopening each one the door closes
            conns = [_connect(door.origin) for _ in range(30)]
            while not stop.is_set():
                for i, conn in enumerate(conns):
                    conn.setblocking(False)
                    try:
                        gone = conn.recv(4096) == b""
                    except BlockingIOError:
                        gone = False
                    except OSError:
                        gone = True
                    if gone:
                        conn.close()
                        conns[i] = _connect(door.origin)
                        opened[0] += 1
                time.sleep(0.01)
            for conn in conns:
                conn.close()

        thread = threading.Thread(target=flood, daemon=True)
        thread.start()
        try:
            time.sleep(EVICT_IDLE_AFTER + 0.2)
            for _ in range(3):
                doc = door.rpc(send_request(SigningKey.generate(), door.did))
                assert doc["_status"] == 200 and "result" in doc, doc
        finally:
            stop.set()
            thread.join(10)
        assert opened[0] >= 1  # the flood really was reconnecting


def test_simultaneous_card_gets_are_served_up_to_the_limit() -> None:
    limit = 20
    with live_door("open", max_connections=limit, max_per_client=0) as door:
        request = b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n"
        conns = [_connect(door.origin) for _ in range(3 * limit)]
        for conn in conns:
            conn.sendall(request)
        answers = []
        for conn in conns:
            conn.settimeout(5)
            try:
                answers.append(conn.recv(16))
            except OSError:
                answers.append(b"")
            conn.close()
        served = sum(a.startswith(b"HTTP/1.1 200") for a in answers)
        refused = sum(a.startswith(b"HTTP/1.1 503") for a in answers)
        assert served >= limit and served + refused == len(conns), (served, refused)


def test_one_address_cannot_hold_more_than_its_share() -> None:
    with live_door("open", max_connections=100, max_per_client=5) as door:
        mine = [_connect(door.origin) for _ in range(5)]
        try:
            extra = _connect(door.origin)
            answer = _closed_within(extra, 2)
            assert answer is not None and answer.startswith(b"HTTP/1.1 503"), answer
            extra.close()
            # another address is still served
            doc = door.rpc(send_request(SigningKey.generate(), door.did))
            assert "result" in doc, doc
        finally:
            for conn in mine:
                conn.close()


def test_a_connection_that_sends_nothing_closes_after_the_idle_timeout() -> None:
    with live_door("open", idle=0.3, slow=10.0) as door:
        conn = _connect(door.origin)
        started = time.monotonic()
        try:
            assert _closed_within(conn, 3) is not None
        finally:
            conn.close()
        assert time.monotonic() - started < 2  # long before the 10 s header deadline
        # between requests too: after one answer, the kept-alive connection closes
        conn = _connect(door.origin)
        try:
            conn.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
            started = time.monotonic()
            assert _closed_within(conn, 3) is not None
            assert time.monotonic() - started < 2
        finally:
            conn.close()
