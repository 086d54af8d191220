"""Run an ASGI app under a real uvicorn on 127.0.0.1, on an ephemeral port, in a thread.

    with serve_asgi(app) as base_url:
        httpx.get(base_url + "/...")

The server is always stopped when the block ends. ``run_uvicorn`` is the same for a caller
that brings its own ``uvicorn.Config`` and bound socket (the door's tests do).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


@contextmanager
def run_uvicorn(config: uvicorn.Config, sock: socket.socket) -> Iterator[None]:
    """Start ``config`` on ``sock`` in a thread; stop it (and close ``sock``) on exit."""
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def serve_asgi(app: Any, *, host: str = "127.0.0.1", **config: Any) -> Iterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    with run_uvicorn(uvicorn.Config(app, log_level="warning", lifespan="on", **config), sock):
        yield f"http://{host}:{port}"
