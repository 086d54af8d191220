"""Bench: the relay's figures, each against a baseline measured in the same run.

    python bench/relay.py [--only deposit] [--messages 6000] [--clients 16] [--senders 500]

Figures (each a function ``figure_<name>(args) -> dict``, registered in ``FIGURES``):

- ``deposit``: server CPU per accepted deposit of a real ``muretai relay serve`` (SQLite
  WAL, synchronous=NORMAL, rate limits off), read from /proc/<pid>/stat, against the CPU per
  accepted message of a real ``muretai serve`` door under the same load shape in the same
  run (bench/door.py). Each verifies one Ed25519 signature per request. Target: relay <= door.

- ``drain``: ``turn-check`` draining ``--drain`` (default 2,000) waiting messages from a real
  relay: listened, opened, verified, passed through consent, stored and acknowledged, per
  second (the same code ``op turn-check`` runs, in-process). Target: >= 2,000/s.
- ``wake``: a deposit made while ``turn-check --wait`` holds its long-poll, from the
  deposit's send until the message is stored (then printed): median of ``--wakes`` rounds on
  loopback. Target: <= 200 ms.

Prints a few lines on stderr and one JSON line per figure on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.door import add_arguments, client, cpu_seconds, request_bytes, run_door  # noqa: E402
from muretai_cli.artifacts.message import build_message, build_message_send  # noqa: E402
from muretai_cli.seam import (  # noqa: E402
    SigningKey,
    seal_box,
    sign_envelope,
    sign_relay_send,
)

RELAY_URL = "http://127.0.0.1:1/relay"  # what tokens name; the process binds its own port


def start_relay(home: str, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """A real ``muretai relay serve`` on an ephemeral port, and that port."""
    proc = subprocess.Popen([sys.executable, "-m", "muretai_cli", "relay", "serve",
                             "--url", RELAY_URL, "--port", "0", *args],
                            env={**os.environ, "MURETAI_HOME": home}, cwd=ROOT,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert proc.stderr is not None
    while True:
        line = proc.stderr.readline().decode()
        if not line:
            raise SystemExit("the relay did not start")
        found = re.search(r"listening on http://[0-9.]+:([0-9]+)", line)
        if found:
            return proc, int(found.group(1))


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def deposits(count: int, senders: list[SigningKey], recipients: list[SigningKey]) -> list[bytes]:
    """Pre-made deposit requests: a signed message/send sealed to its recipient, as a client
    sends it (the sealing is the client's cost, paid here before the clock starts)."""
    now = int(time.time())
    out = []
    for i in range(count):
        sender, to = senders[i % len(senders)], recipients[i % len(recipients)]
        env = sign_envelope(sender, to=to.did, text=f"bench message {i}: hello", timestamp=now,
                            context_id=f"c-{i % 97}")
        plain = json.dumps(build_message_send(build_message(env), i)).encode()
        blob = seal_box(sender, to.enc_pub, plain, ad=b"")
        deposit_id = os.urandom(16).hex()
        body = {"to": to.did, "from": sender.did, "from_enc": sender.enc_pub, "id": deposit_id,
                "blob": blob, "sig": sign_relay_send(sender, to=to.did, deposit_id=deposit_id,
                                                     blob=blob)}
        out.append(request_bytes(json.dumps(body, separators=(",", ":")).encode(),
                                 b"/relay/send"))
    return out


def load(port: int, requests: list[bytes], clients: int,
         accepted: bytes) -> tuple[int, float, list[float]]:
    """Send ``requests`` over ``clients`` keep-alive connections; (accepted, seconds, latencies)."""
    shards = [requests[i::clients] for i in range(clients)]
    per: list[tuple[list[float], list[int]]] = [([], []) for _ in shards]
    threads = [threading.Thread(target=client, args=(port, shard, lat, out, accepted))
               for shard, (lat, out) in zip(shards, per, strict=True)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    latencies = sorted(x for lat, _ in per for x in lat)
    return sum(sum(out) for _, out in per), elapsed, latencies


def relay_deposits(args: argparse.Namespace) -> dict[str, Any]:
    """Server CPU per accepted deposit of a real relay process."""
    home = tempfile.mkdtemp(prefix="muretai-bench-relay-")
    proc, port = start_relay(home, "--rate-per-sender", "0", "--rate-per-mailbox", "0",
                             "--max-waiting", str(args.messages + args.warmup),
                             "--http", args.http, *(["--durable"] if args.durable else []))
    try:
        print(f"pre-sealing {args.messages + args.warmup} deposits from {args.senders} "
              "senders...", file=sys.stderr)
        senders = [SigningKey.generate() for _ in range(args.senders)]
        recipients = [SigningKey.generate() for _ in range(max(1, args.senders // 5))]
        bodies = deposits(args.messages + args.warmup, senders, recipients)
        client(port, bodies[:args.warmup], [], [], b'"queued":true')
        cpu0 = cpu_seconds(proc.pid)
        accepted, elapsed, latencies = load(port, bodies[args.warmup:], args.clients,
                                            b'"queued":true')
        cpu1 = cpu_seconds(proc.pid)
    finally:
        stop(proc)
    summary = {
        "deposits": args.messages, "accepted": accepted,
        "accepted_per_s": round(accepted / elapsed, 1),
        "p50_ms": round(latencies[len(latencies) // 2] * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
        "server_cpu_ms_per_accepted": round((cpu1 - cpu0) * 1000 / max(accepted, 1), 3),
    }
    print(f"relay: accepted {accepted}/{args.messages} deposits = {summary['accepted_per_s']}/s; "
          f"p50 {summary['p50_ms']} ms; server CPU {summary['server_cpu_ms_per_accepted']} ms "
          "per accepted deposit", file=sys.stderr)
    return summary


def figure_deposit(args: argparse.Namespace) -> dict[str, Any]:
    """Relay CPU per accepted deposit vs the door's CPU per accepted message, same run."""
    door = run_door(args)
    relay = relay_deposits(args)
    ratio = relay["server_cpu_ms_per_accepted"] / max(door["server_cpu_ms_per_accepted"], 1e-9)
    result = {"bench": "relay.deposit", "clients": args.clients, "senders": args.senders,
              "durable": args.durable, "relay": relay,
              "door": {k: door[k] for k in ("accepted", "accepted_per_s", "p50_ms",
                                            "server_cpu_ms_per_accepted")},
              "relay_over_door_cpu": round(ratio, 3), "target": "relay_over_door_cpu <= 1",
              "met": ratio <= 1.0}
    print(f"relay/door CPU per accepted request: {ratio:.2f} (target <= 1)", file=sys.stderr)
    return result


def _turn_check(home: str) -> tuple[Any, Any, subprocess.Popen[bytes], int, SigningKey]:
    """A relay whose --url is its real address, and a TurnCheck for a fresh identity."""
    import socket

    os.environ["MURETAI_HOME"] = home
    from muretai_cli.cli._visitout import client_for
    from muretai_cli.inbox.store import DoorStore, db_path
    from muretai_cli.visit.relay import RelayClient
    from muretai_cli.visit.turn import TurnCheck

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/relay"
    proc = subprocess.Popen([sys.executable, "-m", "muretai_cli", "relay", "serve", "--url", url,
                             "--port", str(port), "--rate-per-sender", "0",
                             "--rate-per-mailbox", "0", "--max-waiting", "100000"],
                            env={**os.environ}, cwd=ROOT, stderr=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    me = SigningKey.generate()
    store = DoorStore(db_path(me.did))
    check = TurnCheck(me, store, RelayClient(url, client_for), "open")
    return check, store, proc, port, me


def figure_drain(args: argparse.Namespace) -> dict[str, Any]:
    """turn-check: waiting messages opened, verified, stored and acked per second."""
    home = tempfile.mkdtemp(prefix="muretai-bench-turn-")
    check, store, proc, port, me = _turn_check(home)
    try:
        senders = [SigningKey.generate() for _ in range(50)]
        bodies = deposits(args.drain, senders, [me])
        accepted, _, _ = load(port, bodies, 8, b'"queued":true')
        started = time.perf_counter()
        drained = check.drain(0)
        elapsed = time.perf_counter() - started
        shown = store.unshown()
        stored = sum(1 for item in shown if item["outcome"] == "accepted")
    finally:
        store.close()
        stop(proc)
    rate = stored / elapsed
    print(f"turn-check: {stored}/{accepted} stored in {elapsed:.2f} s = {rate:.0f}/s",
          file=sys.stderr)
    return {"bench": "relay.drain", "waiting": accepted, "drained": drained,
            "stored": stored, "seconds": round(elapsed, 3), "per_s": round(rate, 1),
            "target": "per_s >= 2000", "met": rate >= 2000 and stored == accepted}


def figure_wake(args: argparse.Namespace) -> dict[str, Any]:
    """A deposit during turn-check --wait: from its send to stored, median of rounds."""
    import httpx

    home = tempfile.mkdtemp(prefix="muretai-bench-wake-")
    check, store, proc, port, me = _turn_check(home)
    sender = SigningKey.generate()
    latencies: list[float] = []
    try:
        for i in range(args.wakes):
            body = deposits(1, [sender], [me])[0]
            payload = body.split(b"\r\n\r\n", 1)[1]
            done: list[float] = []

            def wait_for_it(done: list[float] = done) -> None:
                check.step(25)
                done.append(time.perf_counter())

            waiter = threading.Thread(target=wait_for_it)
            waiter.start()
            time.sleep(0.3)  # the listener is holding its long-poll
            sent = time.perf_counter()
            httpx.post(f"http://127.0.0.1:{port}/relay/send", content=payload,
                       headers={"content-type": "application/json"}, timeout=10)
            waiter.join(timeout=30)
            if done:
                latencies.append(done[0] - sent)
            print(f"  wake {i + 1}: {latencies[-1] * 1000:.1f} ms", file=sys.stderr)
    finally:
        store.close()
        stop(proc)
    latencies.sort()
    median = latencies[len(latencies) // 2] * 1000 if latencies else float("inf")
    return {"bench": "relay.wake", "rounds": len(latencies), "median_ms": round(median, 1),
            "max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
            "target": "median_ms <= 200", "met": median <= 200}


# name -> figure
FIGURES: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "deposit": figure_deposit,
    "drain": figure_drain,
    "wake": figure_wake,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.add_argument("--only", action="append", choices=sorted(FIGURES),
                        help="run only this figure (repeatable)")
    parser.add_argument("--drain", type=int, default=2000, help="messages waiting (drain)")
    parser.add_argument("--wakes", type=int, default=11, help="rounds (wake)")
    args = parser.parse_args()
    for name in args.only or list(FIGURES):
        print(json.dumps(FIGURES[name](args)), flush=True)


if __name__ == "__main__":
    main()
