"""The shared deadline is a wall-clock bound, even against a peer that trickles its headers.

httpx's timeouts are per phase and per read: a server that sends one header byte every
0.2 s never trips a 1 s read timeout. The client must still give up at the deadline.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from muretai_cli.errors import DeadlineExceeded
from muretai_cli.net import SafeClient


@contextmanager
def trickling_server() -> Iterator[str]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        conns: list[socket.socket] = []
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conns.append(conn)
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                while not stop.is_set():
                    conn.sendall(b"a")
                    time.sleep(0.2)
            except OSError:
                pass
        for conn in conns:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/.well-known/agent-card.json"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def test_trickled_headers_cannot_hold_the_client_past_the_deadline() -> None:
    with trickling_server() as url, SafeClient(timeout=1.0) as client:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded) as err:
            client.get(url)
        elapsed = time.monotonic() - started
    # The trickle never ends: any finite bound shows the deadline held (a loaded machine
    # may add seconds; a per-read timeout would wait forever).
    assert elapsed < 8, f"held for {elapsed:.1f} s past a 1 s deadline"
    assert err.value.data["attempts"][0]["error"] == "deadline"


def test_a_request_after_the_trickle_is_skipped() -> None:
    with trickling_server() as url, SafeClient(timeout=0.6) as client:
        with pytest.raises(DeadlineExceeded):
            client.get(url)
        with pytest.raises(DeadlineExceeded) as err:
            client.get(url)
    assert err.value.data["skipped"][0]["reason"] == "deadline"
