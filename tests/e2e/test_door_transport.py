"""Slow, malformed and arbitrary requests against the running door: always an HTTP answer."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from muretai_cli.seam import SigningKey
from tests.door_helpers import (
    live_door,
    raw_exchange,
    raw_socket,
    refusal_of,
    send_request,
    status_of,
)

try:
    import httptools  # noqa: F401

    PROTOCOLS = ["h11", "httptools"]
except ImportError:  # pragma: no cover
    PROTOCOLS = ["h11"]
each_protocol = pytest.mark.parametrize("http", PROTOCOLS)


@each_protocol
def test_slow_headers_and_body_get_408(http: str) -> None:
    with live_door("open", slow=0.6, http=http) as door:
        started = time.monotonic()
        resp = raw_exchange(door.origin, b"POST / HTTP/1.1\r\nHost: x\r\n")
        assert status_of(resp) == 408 and time.monotonic() - started < 5
        resp = raw_exchange(door.origin, b"")  # nothing at all
        assert status_of(resp) == 408
        head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\""
        started = time.monotonic()
        resp = raw_exchange(door.origin, head)
        assert status_of(resp) == 408 and time.monotonic() - started < 5
        # the door still answers others
        assert "result" in door.rpc(send_request(SigningKey.generate(), door.did))


@each_protocol
def test_one_deadline_covers_headers_and_body(http: str) -> None:
    with live_door("open", slow=1.0, http=http) as door:
        with raw_socket(door.origin) as s:
            started = time.monotonic()
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n")
            time.sleep(0.7)
            s.sendall(b"Content-Length: 10\r\n\r\n{")
            answer = s.recv(4096)
            elapsed = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408") and elapsed < 1.5, (answer[:40], elapsed)


@each_protocol
def test_trickled_body_cannot_hold_a_worker(http: str) -> None:
    with live_door("open", slow=0.8, http=http) as door, raw_socket(door.origin) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        answer = b""
        for _ in range(40):
            try:
                s.sendall(b" ")
            except OSError:
                break
            s.settimeout(0.1)
            try:
                answer += s.recv(4096)
            except TimeoutError:
                continue
            if answer:
                break
        assert answer.startswith(b"HTTP/1.1 408")


@each_protocol
def test_malformed_framing_gets_400_or_404(http: str) -> None:
    with live_door("open", http=http) as door:
        for raw in (b"GARBAGE\r\n\r\n", b"POST / HTTP/1.1\r\nHost x\r\n\r\n",
                    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                    b"\x00\xff\x16\x03\x01\r\n\r\n"):
            resp = raw_exchange(door.origin, raw)
            assert resp.startswith(b"HTTP/1.1 400"), (raw, resp[:80])
            assert refusal_of(resp) == (400, "malformed"), raw  # JSON, not uvicorn's text
        resp = raw_exchange(door.origin, b"POST http://elsewhere.example/ HTTP/1.1\r\nHost: x\r\n"
                                         b"Content-Length: 2\r\n\r\n{}")
        assert status_of(resp) == 404
        # endless headers are cut at a bound (16 KiB), not buffered forever
        resp = raw_exchange(door.origin, b"GET / HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 70000)
        assert refusal_of(resp) == (400, "too-large")


@each_protocol
def test_pipelined_requests_each_get_their_answer(http: str) -> None:
    with live_door("open", http=http) as door:
        alice = SigningKey.generate()
        raw = b""
        for i in range(3):
            body = json.dumps(send_request(alice, door.did, f"p{i}")).encode()
            raw += b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        with raw_socket(door.origin) as s:
            s.sendall(raw)
            data = b""
            while data.count(b'"result"') < 3:
                chunk = s.recv(65536)
                assert chunk, data
                data += chunk
        assert data.count(b"HTTP/1.1 200") == 3


def test_unusable_database_is_named(tmp_path: object) -> None:
    from muretai_cli.errors import InputError
    from muretai_cli.inbox.store import IdentityStore, db_path

    did = SigningKey.generate().did
    path = db_path(did)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(InputError, match="bad-database"):
        IdentityStore(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12)


def _mutated_requests(did: str) -> st.SearchStrategy[bytes]:
    key = SigningKey.generate()
    base = send_request(key, did, "seed")

    def mutate(path: list[str], value: object) -> bytes:
        doc = json.loads(json.dumps(base))
        node = doc
        for step in path[:-1]:
            node = node.setdefault(step, {}) if isinstance(node, dict) else node
        if isinstance(node, dict):
            node[path[-1]] = value
        return json.dumps(doc).encode()

    paths = st.sampled_from([["id"], ["method"], ["params"], ["params", "message"],
                             ["params", "message", "parts"], ["params", "message", "kind"],
                             ["params", "message", "metadata"],
                             ["params", "message", "metadata", "timestamp"],
                             ["params", "message", "metadata", "from"],
                             ["params", "message", "metadata", "sig"],
                             ["params", "message", "contextId"], ["params", "grant"]])
    return st.builds(mutate, paths, json_values)


@pytest.mark.slow
def test_arbitrary_bodies_always_get_an_answer() -> None:
    with live_door("quarantine", rate_per_sender=0, rate_total=0) as door:
        client = httpx.Client(timeout=10)

        def check(body: bytes) -> None:
            resp = client.post(door.base, content=body)
            assert resp.status_code in (200, 400, 413), resp.status_code
            assert "Traceback" not in resp.text and "Internal" not in resp.text
            doc = resp.json()
            assert doc.get("jsonrpc") == "2.0" or "error" in doc

        bodies = st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()) \
            | _mutated_requests(door.did)
        run = settings(max_examples=150, deadline=None,
                       suppress_health_check=list(HealthCheck))(given(bodies)(check))
        try:
            run()
        finally:
            client.close()


@each_protocol
def test_an_empty_query_string_is_a_query_string_too(http: str) -> None:
    with live_door("open", http=http) as door:
        body = json.dumps(send_request(SigningKey.generate(), door.did)).encode()
        for target in (b"/?", b"/?x=1"):
            resp = raw_exchange(door.origin, b"POST " + target + b" HTTP/1.1\r\nHost: x\r\n"
                                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
                                + body)
            assert status_of(resp) == 404, (target, resp[:60])


@each_protocol
def test_a_head_over_16_kib_in_one_read_is_400(http: str) -> None:
    with live_door("open", http=http) as door:
        head = (b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nX-A: "
                + b"a" * 20000 + b"\r\n\r\n")
        assert refusal_of(raw_exchange(door.origin, head)) == (400, "too-large")
        small = b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\r\n"
        assert status_of(raw_exchange(door.origin, small)) == 200



def _answers(sock: socket.socket, count: int, seconds: float = 5.0) -> list[bytes]:
    """The first ``count`` complete responses read from ``sock`` (fewer if it closes)."""
    sock.settimeout(seconds)
    buf = b""
    out: list[bytes] = []
    while len(out) < count:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if sep:
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                           if line.lower().startswith(b"content-length:")), 0)
            if len(rest) >= length:
                out.append(head + sep + rest[:length])
                buf = rest[length:]
                continue
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        buf += chunk
    return out


@each_protocol
def test_a_body_left_unread_by_an_early_answer_is_never_read_as_a_request(http: str) -> None:
    # The door answers 404 before reading the body; the rest of a 200 KB body then arrives in
    # pieces, followed by a pipelined request. The body's bytes must never be parsed as a
    # request head: the next request gets its own answer, or the connection closes.
    with live_door("open", http=http) as door:
        body = b"x" * 200_000
        with raw_socket(door.origin) as s:
            s.sendall(b"POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                      % len(body) + body[:1000])
            first = _answers(s, 1)
            assert first and status_of(first[0]) == 404, first
            closing = b"connection: close" in first[0].lower()
            try:
                for at in range(1000, len(body), 50000):
                    s.sendall(body[at:at + 50000])
                s.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                assert closing  # the door closed the connection, having said so
                return
            rest = _answers(s, 2, seconds=3)
        if closing:
            assert rest == [], rest[:1]
        else:
            assert [status_of(r) for r in rest] == [200], [r[:60] for r in rest]


@each_protocol
def test_an_unread_body_trickling_after_an_early_answer_is_cut_at_the_deadline(http: str) -> None:
    with live_door("open", slow=0.8, http=http) as door, raw_socket(door.origin) as s:
        started = time.monotonic()
        s.sendall(b"POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nxx")
        assert status_of(_answers(s, 1)[0]) == 404
        s.settimeout(0.1)
        closed = False
        while not closed and time.monotonic() - started < 4:
            try:
                s.sendall(b"x")
                closed = s.recv(4096) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
        assert closed and time.monotonic() - started < 2.5, time.monotonic() - started


def test_malformed_requests_on_h11_log_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    # Each of these made the h11 protocol raise a TypeError after its 400 (209 in one run).
    with caplog.at_level("WARNING"), live_door("open", http="h11") as door:
        for raw in (b"GARBAGE\r\n\r\n", b"POST / HTTP/1.1\r\nHost x\r\n\r\n",
                    b"GET / HTTP/1.1\r\n\r\n", b"\x00\xff\x16\x03\x01\r\n\r\n"):
            assert status_of(raw_exchange(door.origin, raw)) == 400
        assert "result" in door.rpc(send_request(SigningKey.generate(), door.did))
    failures = [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL") or r.exc_info]
    assert failures == [], [r.getMessage() for r in failures]


@each_protocol
def test_a_pipelined_request_whose_body_arrives_after_the_first_answer(http: str) -> None:
    # The second request's head came with the first; its 40 KB body arrives after the first
    # answer went out. That body is a body (the message is accepted), not a head over 16 KiB.
    with live_door("open", http=http) as door:
        alice = SigningKey.generate()
        first = json.dumps(send_request(alice, door.did, "short")).encode()
        second = json.dumps(send_request(alice, door.did, "y" * 40_000)).encode()
        with raw_socket(door.origin) as s:
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(first)
                      + first + b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                      % len(second) + second[:100])
            answers = _answers(s, 1)
            assert answers and status_of(answers[0]) == 200, answers
            s.sendall(second[100:])
            answers = _answers(s, 1)
        assert answers and status_of(answers[0]) == 200 and b'"result"' in answers[0], \
            [a[:80] for a in answers]
