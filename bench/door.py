"""Bench: signed message/send accepted by a real ``muretai serve`` on loopback.

Persistence on (SQLite WAL, synchronous=NORMAL), the whole ladder in place, policy open, rate
limits off (they would refuse the load). 16 concurrent keep-alive clients send pre-signed
messages from many distinct senders over raw sockets, so the load generator costs little.
The server runs as a subprocess; its own CPU time is read from /proc/<pid>/stat.

    python bench/door.py [--messages 6000] [--clients 16] [--senders 500]

Prints a few lines on stderr and one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from muretai_cli.artifacts.message import build_message, build_message_send  # noqa: E402
from muretai_cli.seam import SigningKey, sign_envelope  # noqa: E402
from muretai_cli.transport.children import muretai_argv, read_port, stop  # noqa: E402


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def ed25519_verifies_per_second(seconds: float = 1.0) -> float:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    public = key.public_key()
    payload = b'{"contextId":null,"from":"did:key:z6Mk...","messageId":"m-1","text":"hi"}'
    sig = key.sign(payload)
    count = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(100):
            public.verify(sig, payload)
        count += 100
    return count / seconds


def keep_reading(stream: Any) -> None:
    """Read a server's stderr to its end in a thread: the door logs a line per arrival, and a
    pipe nobody reads (64 KiB) would block the server mid-run."""
    threading.Thread(target=lambda: [None for _ in iter(stream.readline, b"")],
                     daemon=True).start()


def request_bytes(body: bytes, path: bytes = b"/") -> bytes:
    return (b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def read_response(sock: socket.socket, buf: bytearray) -> tuple[int, bytes]:
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))  # type: ignore[union-attr]
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        rest += chunk
    del buf[:]
    buf += rest[length:]
    return int(head.split(b" ", 2)[1]), rest[:length]


def client(port: int, requests: list[bytes], latencies: list[float], outcomes: list[int],
           accepted: bytes = b'"result"') -> None:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray()
    for raw in requests:
        started = time.perf_counter()
        sock.sendall(raw)
        status, body = read_response(sock, buf)
        latencies.append(time.perf_counter() - started)
        outcomes.append(1 if status == 200 and accepted in body else 0)
    sock.close()


def drive(port: int, shards: list[list[bytes]], accepted: bytes = b'"result"'
          ) -> tuple[list[float], list[int]]:
    """Send each shard's requests in order over its own keep-alive connection, all shards at
    once, from ONE thread (non-blocking sockets and epoll): a request is sent when the answer
    to the one before it on that connection has arrived. Costs the machine much less CPU than
    a thread per connection (no GIL hand-offs), so the cores go to the servers measured.
    Returns (latencies, outcomes), one per request: 1 for a 200 whose body holds
    ``accepted``."""
    import selectors

    sel = selectors.DefaultSelector()
    latencies: list[float] = []
    outcomes: list[int] = []
    state: dict[int, list[Any]] = {}  # fd -> [socket, shard, next index, buffer, started]
    for shard in shards:
        if not shard:
            continue
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        state[sock.fileno()] = [sock, shard, 1, bytearray(), time.perf_counter()]
        sock.sendall(shard[0])  # a first request fits the socket's buffer
        sel.register(sock, selectors.EVENT_READ)
    length_of = re.compile(rb"(?i)content-length:\s*(\d+)")
    while state:
        for key, _ in sel.select():
            conn = state[key.fd]
            sock, shard, index, buf = conn[0], conn[1], conn[2], conn[3]
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed a connection mid-run")
            buf += chunk
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                continue
            found = length_of.search(buf, 0, end)
            length = int(found.group(1)) if found else 0
            if len(buf) < end + 4 + length:
                continue
            latencies.append(time.perf_counter() - conn[4])
            body = bytes(buf[end + 4:end + 4 + length])
            outcomes.append(1 if buf.startswith(b"HTTP/1.1 200") and accepted in body else 0)
            del buf[:end + 4 + length]
            if index == len(shard):
                sel.unregister(sock)
                sock.close()
                del state[key.fd]
                continue
            conn[2] = index + 1
            conn[4] = time.perf_counter()
            sock.sendall(shard[index])
    sel.close()
    return latencies, outcomes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--messages", type=int, default=6000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--senders", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=400)
    parser.add_argument("--http", default="auto", help="the door's parser: auto|httptools|h11")
    parser.add_argument("--durable", action="store_true", help="serve --durable (fsync each)")


def main() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    print(json.dumps(run_door(parser.parse_args())))


def run_door(args: argparse.Namespace) -> dict[str, object]:
    """Run a real door under load; its figures (also summarised on stderr)."""
    home = tempfile.mkdtemp(prefix="muretai-bench-")
    env = {**os.environ, "MURETAI_HOME": home}
    subprocess.run(muretai_argv("id", "new", "door"), env=env,
                   check=True, capture_output=True)
    door_did = json.loads(Path(home, "keys", "door.key").read_text())["did"]
    proc = subprocess.Popen(muretai_argv("serve", "--as", "door", "--url", "http://127.0.0.1",
                                         "--port", "0", "--dm-policy", "open",
                                         "--rate-per-sender", "0", "--rate-total", "0",
                                         "--http", args.http,
                                         *(["--durable"] if args.durable else [])),
                            env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            cwd=ROOT)
    try:
        assert proc.stderr is not None
        port = read_port(proc.stderr)
        if port is None:
            raise SystemExit("the door did not start")
        keep_reading(proc.stderr)

        print(f"pre-signing {args.messages + args.warmup} messages from {args.senders} "
              "senders...", file=sys.stderr)
        senders = [SigningKey.generate() for _ in range(args.senders)]
        now = int(time.time())
        bodies = []
        for i in range(args.messages + args.warmup):
            env_ = sign_envelope(senders[i % len(senders)], to=door_did,
                                 text=f"bench message {i}: hello door", timestamp=now,
                                 context_id=f"c-{i % 97}")
            body = json.dumps(build_message_send(build_message(env_), i),
                              separators=(",", ":")).encode()
            bodies.append(request_bytes(body))
        warm, load = bodies[:args.warmup], bodies[args.warmup:]

        ok: list[int] = []
        client(port, warm, [], ok)
        latencies: list[float] = []
        outcomes: list[int] = []
        shards = [load[i::args.clients] for i in range(args.clients)]
        per: list[tuple[list[float], list[int]]] = [([], []) for _ in shards]
        threads = [threading.Thread(target=client, args=(port, s, lat, out))
                   for s, (lat, out) in zip(shards, per, strict=True)]
        cpu0 = cpu_seconds(proc.pid)
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        cpu1 = cpu_seconds(proc.pid)
        for lat, out in per:
            latencies += lat
            outcomes += out
        accepted = sum(outcomes)
        latencies.sort()
        verifies = ed25519_verifies_per_second()
        summary = {
            "bench": "door",
            "http": args.http,
            "durable": args.durable,
            "clients": args.clients,
            "senders": args.senders,
            "messages": len(load),
            "accepted": accepted,
            "accepted_per_s": round(accepted / elapsed, 1),
            "p50_ms": round(latencies[len(latencies) // 2] * 1000, 2),
            "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
            "server_cpu_ms_per_accepted": round((cpu1 - cpu0) * 1000 / max(accepted, 1), 3),
            "ed25519_verifies_per_s": round(verifies),
            "target_cpu_ms": 0.6,
        }
        print(f"accepted {accepted}/{len(load)} in {elapsed:.2f} s = "
              f"{summary['accepted_per_s']}/s; p50 {summary['p50_ms']} ms, p99 "
              f"{summary['p99_ms']} ms; server CPU {summary['server_cpu_ms_per_accepted']} ms "
              f"per accepted; raw Ed25519 {summary['ed25519_verifies_per_s']} verifies/s",
              file=sys.stderr)
        return summary
    finally:
        stop(proc)


if __name__ == "__main__":
    main()
