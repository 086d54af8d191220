"""Relay workers: ``relay serve --workers 2`` on one PostgreSQL database, each connection pinned to a chosen worker. A poll held by one worker is woken by a deposit through the other; one deposit sent to both at once is stored once; an ack through one is seen through the other."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.seam import SigningKey
from tests.cli_helpers import run_json
from tests.relay_helpers import deposit_body, listen_body, listener_epoch
from tests.servers import (
    RELAY_ORIGIN,
    children_of,
    race,
    start_relay,
    wait_until,
)

pytestmark = pytest.mark.slow  # real processes started (and killed): seconds each


# -- workers ------------------------------------------------------------------------------
def _accepted_by(client: socket.socket, pids: set[int], timeout: float = 10.0) -> int:
    """Which of ``pids`` accepted the connection ``client`` (its server side's socket)."""
    client_port = client.getsockname()[1]
    server_port = client.getpeername()[1]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        inode = 0
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            local = int(fields[1].rsplit(":", 1)[1], 16)
            remote = int(fields[2].rsplit(":", 1)[1], 16)
            if (local, remote) == (server_port, client_port) and int(fields[9]):
                inode = int(fields[9])
        if inode:
            for pid in pids:
                with contextlib.suppress(OSError):
                    for fd in Path(f"/proc/{pid}/fd").iterdir():
                        with contextlib.suppress(OSError):
                            if os.readlink(fd) == f"socket:[{inode}]":
                                return pid
        time.sleep(0.01)
    raise AssertionError("no worker accepted the connection")


def _post_raw(client: socket.socket, path: str, body: dict[str, Any]) -> None:
    raw = json.dumps(body).encode()
    client.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(raw)}\r\n\r\n".encode() + raw)


def _read_answer(client: socket.socket) -> tuple[int, Any]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = client.recv(65536)
        assert chunk, buf
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        chunk = client.recv(65536)
        assert chunk
        body += chunk
    return int(head.split(b" ", 2)[1]), json.loads(body)


def _connect_to(port: int, want: int, pids: set[int]) -> socket.socket:
    """A connection that worker ``want`` accepted (new ones until the kernel gives one)."""
    for _ in range(64):
        client = socket.create_connection(("127.0.0.1", port), timeout=25)
        if _accepted_by(client, pids) == want:
            return client
        client.close()
    raise AssertionError(f"worker {want} was given no connection in 64 tries")


def test_relay_workers_on_postgresql_wake_each_other_and_share_deposits_and_acks(pg_url: str, tmp_path: Path) -> None:
    assert run_json("db", "init", "--relay", "--db", pg_url)[0] == 0
    proc = start_relay(tmp_path, "--db", pg_url, "--workers", "2").wait_ready()
    try:
        port = int(proc.base.rsplit(":", 1)[1])
        wait_until(lambda: len(children_of(proc.proc.pid)) == 2, "two workers run")
        workers = children_of(proc.proc.pid)
        alice, bob = SigningKey.generate(), SigningKey.generate()
        one, other = sorted(workers)
        with _connect_to(port, one, workers) as poller:
            _post_raw(poller, "/listen", listen_body(bob, RELAY_ORIGIN, wait=20))
            wait_until(lambda: listener_epoch(pg_url, bob.did) == 1,
                       "the first worker has taken the poll")
            with _connect_to(port, other, workers) as sender:
                body = deposit_body(alice, bob, "across")
                started = time.monotonic()
                _post_raw(sender, "/send", body)
                assert _read_answer(sender) == (200, {"queued": True, "id": body["id"]})
            status, doc = _read_answer(poller)
            assert status == 200 and [m["id"] for m in doc["messages"]] == [body["id"]]
            assert time.monotonic() - started < 5  # woken, long before the 20 s wait
        # one deposit sent to both workers at once is stored once; an ack through one
        # worker is seen by a listen through the other
        carol = SigningKey.generate()
        dups = [deposit_body(alice, carol, f"dup {i}") for i in range(5)]
        with _connect_to(port, one, workers) as x, _connect_to(port, other, workers) as y:
            for body in dups:
                race([lambda s=s, b=body: _post_raw(s, "/send", b) for s in (x, y)])
                assert [_read_answer(s)[0] for s in (x, y)] == [200, 200]
            _post_raw(x, "/listen", listen_body(carol, RELAY_ORIGIN, wait=0))
            status, doc = _read_answer(x)
            ids = [m["id"] for m in doc["messages"]]
            assert status == 200 and sorted(ids) == sorted(b["id"] for b in dups), doc
            _post_raw(y, "/ack", listen_body(carol, RELAY_ORIGIN) | {"ids": ids})
            assert _read_answer(y) == (200, {"acked": 5})
            _post_raw(x, "/listen", listen_body(carol, RELAY_ORIGIN, wait=0))
            assert _read_answer(x)[1]["messages"] == []
    finally:
        proc.stop()
