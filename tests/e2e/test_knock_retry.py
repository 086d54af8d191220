"""Issue 8 §8: a knock whose answer is lost is retried once, byte for byte; our door answers
the exact repeat with the reply it kept (recovered) and delivers nothing twice; a door that
answers the retry -32002 has seen the first attempt ("delivered; the reply was lost")."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door

pytestmark = pytest.mark.slow  # real processes started (and killed): seconds each

Mode = Callable[[int, bytes], bytes | None]  # (POST number, body) -> answer body, or None: drop


def _read_request(conn: socket.socket) -> tuple[str, str, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return "", "", b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(body) < length:
        body += conn.recv(65536)
    return method, path, body


@contextmanager
def lossy_front(upstream: list[str], mode: Mode) -> Iterator[tuple[str, list[bytes]]]:
    """A loopback HTTP front that forwards to ``upstream[0]`` but lets ``mode`` drop the
    connection (no answer: the answer is lost) or answer a POST itself."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    posts: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                method, path, body = _read_request(conn)
                if not method:
                    continue
                answer: bytes | None
                status = 200
                if method == "POST":
                    posts.append(body)
                    answer = mode(len(posts), body)
                    if answer is None:  # forward, then lose the answer
                        httpx.post(upstream[0] + path, content=body, timeout=10,
                                   headers={"content-type": "application/json"})
                        conn.shutdown(socket.SHUT_RDWR)
                        continue
                    if answer == b"forward":
                        got = httpx.post(upstream[0] + path, content=body, timeout=10,
                                         headers={"content-type": "application/json"})
                        status, answer = got.status_code, got.content
                else:
                    got = httpx.get(upstream[0] + path, timeout=10)
                    status, answer = got.status_code, got.content
                conn.sendall(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\nConnection: close\r\n\r\n"
                             % (status, len(answer)) + answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", posts
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            server.shutdown(socket.SHUT_RDWR)  # wakes the accept() the thread is blocked in
        server.close()
        thread.join(timeout=5)
        assert not thread.is_alive(), "the front's thread did not end"


def _door_behind(mode: Mode) -> Any:
    @contextmanager
    def ctx() -> Iterator[tuple[Any, str, list[bytes]]]:
        upstream: list[str] = []
        with lossy_front(upstream, mode) as (front, posts), \
                live_door("open", url=front) as door:
            upstream.append(door.address)
            yield door, front, posts
    return ctx()


def test_a_lost_answer_is_retried_byte_for_byte_and_recovered() -> None:
    new_identity("vis")
    with _door_behind(lambda n, body: None if n == 1 else b"forward") as (door, front, posts):
        out = run("op", "--as", "vis", "dm", door.did, "only once", "--connect", front,
                  "--json")
        assert out.exit_code == 0, (out.stdout, out.stderr)
        doc = json.loads(out.stdout)
        # the door's receipt, given again for the byte-identical retry
        assert doc["state"] == "delivered" and doc["receipt"]["verified"] is True
        assert doc["reply"] is None
        assert "reply-recovered" in [r["code"] for r in doc["receipt"]["reasons"]]
        assert len(posts) == 2 and posts[0] == posts[1]  # byte-identical
        store = door.store()
        try:
            assert [m["text"] for m in store.conversation()] == ["only once"]
        finally:
            store.close()


def test_a_door_answering_the_retry_as_a_replay_has_delivered_it() -> None:
    new_identity("vis")
    replay = json.dumps({"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32002, "message": "Replay or stale message"}}).encode()
    with _door_behind(lambda n, body: None if n == 1 else replay) as (door, front, posts):
        out = run("op", "--as", "vis", "dm", door.did, "hello", "--connect", front)
        assert out.exit_code == 0, (out.stdout, out.stderr)
        assert out.stdout.startswith("delivered to") and "the reply was lost" in out.stdout
        assert "reply-lost" in out.stderr
        assert len(posts) == 2 and posts[0] == posts[1]
