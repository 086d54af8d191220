"""Bench: the relay's figures, each against a baseline measured in the same run.

    python bench/relay.py [--only deposit] [--messages 6000] [--clients 16] [--senders 500]
                          [--drain 2000] [--rounds 3] [--wakes 11]

Figures (each a function ``figure_<name>(args) -> dict``, registered in ``FIGURES``):

- ``deposit``: server CPU per accepted deposit of a real ``muretai relay serve`` (SQLite
  WAL, synchronous=NORMAL, rate limits off), read from /proc/<pid>/stat, against the CPU per
  accepted message of a real ``muretai serve`` door under the same load shape in the same
  run (bench/door.py). Each verifies one Ed25519 signature per request. Target: relay <= door.

- ``drain``: ``turn-check`` draining ``--drain`` (default 2,000) waiting messages from a real
  relay: listened, opened, verified, passed through consent, stored and acknowledged, per
  second (the code ``op turn-check`` runs, in-process, one store transaction per listen
  answer); ``--rounds`` (3) drains, the median is the figure. Target: >= 2,000/s.
  Baseline in the same run: the bare crypto floor (open each box, verify each signature) of
  the same messages, per round; also the wall time of a real ``op turn-check --json``
  process draining and printing as many again (its start included).
- ``wake``: a deposit made while a real ``op turn-check --wait`` process holds its long-poll
  (seen in the relay's listener table), from the deposit's send until turn-check's output
  arrives on its stdout: median of ``--wakes`` rounds on loopback. Target: <= 200 ms.
  Baseline in the same run: a plain deposit's round trip.

Prints a few lines on stderr and one JSON line per figure on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
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

from bench.door import (  # noqa: E402
    add_arguments,
    client,
    cpu_seconds,
    keep_reading,
    request_bytes,
    run_door,
)
from muretai_cli.artifacts.message import build_message, build_message_send  # noqa: E402
from muretai_cli.seam import (  # noqa: E402
    SigningKey,
    seal_box,
    sign_envelope,
    sign_relay_send,
)
from muretai_cli.transport.children import muretai_argv, read_port, stop  # noqa: E402

RELAY_URL = "http://127.0.0.1:1/relay"  # what tokens name; the process binds its own port


def start_relay(home: str, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    """A real ``muretai relay serve`` on an ephemeral port, and that port."""
    proc = subprocess.Popen(muretai_argv("relay", "serve", "--url", RELAY_URL, "--port", "0",
                                         *args),
                            env={**os.environ, "MURETAI_HOME": home}, cwd=ROOT,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert proc.stderr is not None
    port = read_port(proc.stderr)
    if port is None:
        raise SystemExit("the relay did not start")
    keep_reading(proc.stderr)
    return proc, port


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


def _relay_for(home: str) -> tuple[subprocess.Popen[bytes], int, str]:
    """A real ``relay serve`` whose --url is its real address (tokens name that origin)."""
    import socket

    os.environ["MURETAI_HOME"] = home
    with socket.socket() as sock:  # a free port, named in --url before the relay binds it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/relay"
    proc = subprocess.Popen(muretai_argv("relay", "serve", "--url", url, "--port", str(port),
                                         "--rate-per-sender", "0", "--rate-per-mailbox", "0",
                                         "--max-waiting", "100000"),
                            env={**os.environ}, cwd=ROOT, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL)
    assert proc.stderr is not None
    if read_port(proc.stderr) is None:
        raise SystemExit("the relay did not start")
    keep_reading(proc.stderr)
    return proc, port, url


def _cli(*args: str) -> str:
    done = subprocess.run(muretai_argv(*args), env={**os.environ},
                          cwd=ROOT, capture_output=True, check=True)
    return done.stdout.decode().strip()


def _identity(url: str) -> SigningKey:
    """A CLI identity ``bob`` on the relay at ``url``, policy open (nobody is held)."""
    from muretai_cli.home import KeyStore, keys_dir

    _cli("id", "new", "bob")
    _cli("id", "relay", "bob", url)
    _cli("op", "--as", "bob", "policy", "open")
    return KeyStore(keys_dir()).load("bob").signing_key()


def _floor(me: SigningKey, bodies: list[bytes]) -> float:
    """Seconds to open each deposit's box and verify its message's signature: the crypto
    every drain must do, the baseline the drain is measured against (same run, same data)."""
    from muretai_cli.inbox import ladder
    from muretai_cli.inbox.arrival import read_message
    from muretai_cli.inbox.relayed import RELAYED_WINDOW
    from muretai_cli.seam import open_box

    docs = [json.loads(b.split(b"\r\n\r\n", 1)[1]) for b in bodies]
    fresh = SigningKey(me.seed)  # no box key remembered yet, as in the drain
    started = time.perf_counter()
    for doc in docs:
        plain = open_box(fresh, doc["from_enc"], doc["blob"], ad=b"")
        assert plain is not None
        params = ladder.rpc_shape(ladder.parse_request(plain))[1]
        read_message(params, me=fresh.did, now=int(time.time()), window=RELAYED_WINDOW).verify()
    return time.perf_counter() - started


def figure_drain(args: argparse.Namespace) -> dict[str, Any]:
    """turn-check: waiting messages opened, verified, stored and acked per second, and the
    same drain's time over the bare crypto floor (open + verify) of the same messages;
    ``--rounds`` rounds of ``--drain`` messages each (the median is the figure: one round
    on a shared machine says as much about its neighbours as about the drain)."""
    import statistics

    from muretai_cli.cli._visitout import client_for
    from muretai_cli.inbox.store import open_identity_store
    from muretai_cli.visit.relay import RelayClient
    from muretai_cli.visit.turn import TurnCheck

    home = tempfile.mkdtemp(prefix="muretai-bench-turn-")
    proc, port, url = _relay_for(home)
    me = _identity(url)
    store = open_identity_store(me.did)
    rounds: list[dict[str, Any]] = []
    try:
        senders = [SigningKey.generate() for _ in range(50)]
        # One-off costs stay before the clock (the real process's figure below has them):
        # the modules a drain imports on first use, and the first HTTP client's (httpcore
        # loaded, the TLS context built once per process).
        import muretai_cli.inbox.relayed  # noqa: F401

        client_for(1, 1).close()
        for _ in range(args.rounds):
            bodies = deposits(args.drain, senders, [me])
            accepted, _, _ = load(port, bodies, 8, b'"queued":true')
            floor = _floor(me, bodies)
            check = TurnCheck(me, store, RelayClient(url, client_for), "open")
            started = time.perf_counter()
            drained = check.drain(0)
            elapsed = time.perf_counter() - started
            fresh = store.unshown()
            stored = sum(1 for item in fresh if item["outcome"] == "accepted")
            store.mark_shown([int(item["row"]) for item in fresh])
            rounds.append({"waiting": accepted, "drained": drained, "stored": stored,
                           "seconds": round(elapsed, 3), "per_s": round(stored / elapsed, 1),
                           "floor_seconds": round(floor, 3),
                           "drain_over_floor": round(elapsed / floor, 2)})
            print(f"turn-check: {stored}/{accepted} stored in {elapsed:.2f} s = "
                  f"{stored / elapsed:.0f}/s; {elapsed / floor:.2f}x the open+verify floor "
                  f"({floor:.2f} s)", file=sys.stderr)
        load(port, deposits(args.drain, senders, [me]), 8, b'"queued":true')  # a last lot
        cli_started = time.perf_counter()
        printed = json.loads(_cli("op", "--as", "bob", "turn-check", "--json"))["messages"]
        cli_seconds = time.perf_counter() - cli_started
    finally:
        store.close()
        stop(proc)
    rate = statistics.median(r["per_s"] for r in rounds)
    print(f"turn-check: median {rate:.0f}/s over {len(rounds)} rounds; a real turn-check "
          f"process drained and printed another {len(printed)} in {cli_seconds:.2f} s",
          file=sys.stderr)
    return {"bench": "relay.drain", "rounds": rounds, "per_s": rate,
            "drain_over_floor": statistics.median(r["drain_over_floor"] for r in rounds),
            "cli_printed": len(printed), "cli_seconds": round(cli_seconds, 2),
            "target": "median per_s >= 2000",
            "met": rate >= 2000 and all(r["stored"] == r["waiting"] for r in rounds)}


def figure_wake(args: argparse.Namespace) -> dict[str, Any]:
    """A deposit while a real ``op turn-check --wait`` process holds its long-poll: from
    the deposit's send until turn-check's output arrives; median of rounds, against a
    plain deposit's round trip (the baseline) in the same run."""
    import sqlite3

    import httpx

    home = tempfile.mkdtemp(prefix="muretai-bench-wake-")
    proc, _, url = _relay_for(home)
    me = _identity(url)
    relay_db = Path(home) / "relay" / "relay.sqlite3"
    sender = SigningKey.generate()
    latencies: list[float] = []
    trips: list[float] = []

    def epoch() -> int | None:
        with sqlite3.connect(relay_db, timeout=5) as db:
            row = db.execute("SELECT epoch FROM relay_listeners WHERE did=?",
                             (me.did,)).fetchone()
        return None if row is None else int(row[0])

    try:
        with httpx.Client(timeout=10) as http:
            for i in range(args.wakes):
                for body in deposits(2, [sender], [sender]):  # baseline: a deposit's trip
                    payload = body.split(b"\r\n\r\n", 1)[1]
                    sent = time.perf_counter()
                    http.post(f"{url}/send", content=payload,
                              headers={"content-type": "application/json"})
                    trips.append(time.perf_counter() - sent)
                payload = deposits(1, [sender], [me])[0].split(b"\r\n\r\n", 1)[1]
                before = epoch()
                waiter = subprocess.Popen(
                    muretai_argv("op", "--as", "bob", "turn-check", "--wait", "30", "--json"),
                    env={**os.environ}, cwd=ROOT,
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                assert waiter.stdout is not None
                while epoch() == before:  # its listen reached the relay: it holds
                    if waiter.poll() is not None:
                        raise SystemExit("turn-check ended before it listened")
                    time.sleep(0.002)
                time.sleep(0.05)  # let the held poll settle into its wait
                sent = time.perf_counter()
                http.post(f"{url}/send", content=payload,
                          headers={"content-type": "application/json"})
                first = waiter.stdout.read(1)
                arrived = time.perf_counter()
                rest = waiter.stdout.read()
                waiter.wait(timeout=30)
                assert json.loads(first + rest)["messages"], "the deposit was not printed"
                latencies.append(arrived - sent)
                print(f"  wake {i + 1}: {latencies[-1] * 1000:.1f} ms", file=sys.stderr)
    finally:
        stop(proc)
    latencies.sort()
    trips.sort()
    median = latencies[len(latencies) // 2] * 1000 if latencies else float("inf")
    trip = trips[len(trips) // 2] * 1000
    return {"bench": "relay.wake", "rounds": len(latencies), "median_ms": round(median, 1),
            "max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
            "deposit_trip_median_ms": round(trip, 2), "wake_over_trip": round(median / trip, 1),
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
    parser.add_argument("--rounds", type=int, default=3, help="drains of --drain (drain)")
    parser.add_argument("--wakes", type=int, default=11, help="rounds (wake)")
    args = parser.parse_args()
    for name in args.only or list(FIGURES):
        print(json.dumps(FIGURES[name](args)), flush=True)


if __name__ == "__main__":
    main()
