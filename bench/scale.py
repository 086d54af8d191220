"""Bench: the price of sharing. Accepted signed messages per second, and CPU per accepted
message (door processes plus PostgreSQL's own), for one ``muretai serve`` on SQLite, one on
PostgreSQL, and two (``--workers 2``) on PostgreSQL, side by side in one run; then relay
deposits per second (``muretai relay serve``) the same three ways.

PostgreSQL is a throwaway server started by ``.ci/pg start --durable`` (its defaults:
fsync and synchronous_commit on, so each commit waits for the disk, several commits
sharing one flush); ``--pg-async`` adds a row with ``synchronous_commit=off``. The SQLite
door runs as always (WAL, synchronous=NORMAL). One machine cannot show horizontal scale:
the load client shares its cores with the servers; the ratios are the point.

    python bench/scale.py [--messages 4000] [--clients 16] [--senders 400] [--rounds 3]
                          [--no-relay | --no-door] [--sqlite-durable] [--pg-async]

Prints lines on stderr and one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from door import client, cpu_seconds, drive, request_bytes  # type: ignore[import-not-found]  # noqa: E402

from muretai_cli.artifacts.message import build_message, build_message_send  # noqa: E402
from muretai_cli.seam import (  # noqa: E402
    SigningKey,
    seal_box,
    sign_envelope,
    sign_relay_send,
)
from muretai_cli.transport.children import muretai_argv, read_port, stop  # noqa: E402


def relay_bodies(count: int, senders: int) -> list[bytes]:
    """Pre-signed sealed deposits from ``senders`` senders into as many mailboxes."""
    keys = [SigningKey.generate() for _ in range(senders)]
    boxes = [SigningKey.generate() for _ in range(senders)]
    out = []
    for i in range(count):
        sender, to = keys[i % senders], boxes[(i * 7) % senders]
        blob = seal_box(sender, to.enc_pub, f"scale deposit {i}".encode(), ad=b"")
        deposit_id = f"d-{i}"
        body = {"to": to.did, "from": sender.did, "from_enc": sender.enc_pub, "id": deposit_id,
                "blob": blob, "sig": sign_relay_send(sender, to=to.did, deposit_id=deposit_id,
                                                     blob=blob)}
        raw = json.dumps(body, separators=(",", ":")).encode()
        out.append(b"POST /send HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                   b"\r\nContent-Length: " + str(len(raw)).encode() + b"\r\n\r\n" + raw)
    return out


def tree(pid: int) -> set[int]:
    """``pid`` and every descendant (through /proc/<pid>/task/*/children)."""
    seen = {pid}
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                for child in (task / "children").read_text().split():
                    if int(child) not in seen:
                        seen.add(int(child))
                        todo.append(int(child))
        except FileNotFoundError:
            continue
    return seen


def cpu_of(pids: set[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += cpu_seconds(pid)
    return total


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine, all cores (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def start_pg(durable_commit: bool) -> tuple[dict[str, str], int]:
    out = subprocess.run([str(ROOT / ".ci" / "pg"), "start", "--durable"], check=True,
                         capture_output=True, text=True).stdout
    env: dict[str, str] = {}
    for line in out.splitlines():
        for part in shlex.split(line.removeprefix("export ")):
            key, _, value = part.partition("=")
            env[key] = value
    if not durable_commit:
        import psycopg

        with psycopg.connect(env["MURETAI_TEST_PG"], autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET synchronous_commit = off")
            conn.execute("SELECT pg_reload_conf()")
    pid = int(Path(env["MURETAI_PG_DIR"], "data", "postmaster.pid").read_text().split()[0])
    return env, pid


def stop_pg(env: dict[str, str]) -> None:
    subprocess.run([str(ROOT / ".ci" / "pg"), "stop", env["MURETAI_PG_DIR"]], check=False)


def muretai(env: dict[str, str], *args: str) -> None:
    subprocess.run(muretai_argv(*args), env=env, check=True,
                   capture_output=True, cwd=ROOT)


def run_case(label: str, *, db: str | None, workers: int, pg_pid: int | None,
             args: argparse.Namespace, relay: bool = False,
             durable: bool = False) -> dict[str, object]:
    home = tempfile.mkdtemp(prefix="muretai-scale-")
    env = {**os.environ, "MURETAI_HOME": home}
    extra = ["--db", db] if db else []
    if relay:
        if db:
            muretai(env, "db", "init", "--relay", *extra)
        command = ["relay", "serve", "--url", "http://127.0.0.1", "--port", "0",
                   "--rate-per-sender", "0", "--rate-per-mailbox", "0", "--max-waiting",
                   "100000"]
        if workers > 1:
            command += ["--workers", str(workers)]
    else:
        muretai(env, "id", "new", "door")
        limit = "100000000" if args.rate_limits else "0"  # counted but never reached, or off
        door_did = json.loads(Path(home, "keys", "door.key").read_text())["did"]
        if db:
            muretai(env, "db", "init", "--as", "door", *extra)
        command = ["serve", "--as", "door", "--url", "http://127.0.0.1", "--port", "0",
                   "--dm-policy", "open", "--rate-per-sender", limit, "--rate-total", limit,
                   "--workers", str(workers), *(["--durable"] if durable else [])]
    proc = subprocess.Popen(muretai_argv(*command, *extra),
                            env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            cwd=ROOT)
    try:
        assert proc.stderr is not None
        port = read_port(proc.stderr)
        if port is None:
            raise SystemExit(f"{label}: the door did not start")
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        ok = b'"queued":true' if relay else b'"result"'
        if relay:
            bodies = relay_bodies(args.messages + args.warmup, args.senders)
        else:
            senders = [SigningKey.generate() for _ in range(args.senders)]
            now = int(time.time())
            bodies = []
            for i in range(args.messages + args.warmup):
                env_ = sign_envelope(senders[i % len(senders)], to=door_did,
                                     text=f"scale message {i}: hello door", timestamp=now,
                                     context_id=f"c-{i % 97}")
                bodies.append(request_bytes(json.dumps(
                    build_message_send(build_message(env_), i), separators=(",", ":")).encode()))
        warm, load = bodies[:args.warmup], bodies[args.warmup:]
        for _ in range(50):  # the server answers once uvicorn is up in every worker
            try:
                client(port, warm[:1], [], [], ok)
                break
            except OSError:
                time.sleep(0.1)
        client(port, warm[1:], [], [], ok)
        shards = [load[i::args.clients] for i in range(args.clients)]
        doors = tree(proc.pid)
        pg = tree(pg_pid) if pg_pid else set()
        cpu0, pg0 = cpu_of(doors), cpu_of(pg)
        own0 = os.times()
        busy0, all0 = machine_ticks()
        t0 = time.perf_counter()
        if args.threads:
            per: list[tuple[list[float], list[int]]] = [([], []) for _ in shards]
            threads = [threading.Thread(target=client, args=(port, s, lat, out, ok))
                       for s, (lat, out) in zip(shards, per, strict=True)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            lats = [x for lat, _ in per for x in lat]
            outs = [x for _, out in per for x in out]
        else:
            lats, outs = drive(port, shards, ok)
        elapsed = time.perf_counter() - t0
        own1 = os.times()
        busy1, all1 = machine_ticks()
        cpu1, pg1 = cpu_of(doors), cpu_of(tree(pg_pid) if pg_pid else set())
        accepted = sum(outs)
        latencies = sorted(lats)
        client_cpu = (own1.user + own1.system) - (own0.user + own0.system)
        row: dict[str, object] = {
            "case": label,
            "accepted": accepted,
            "messages": len(load),
            "accepted_per_s": round(accepted / elapsed, 1),
            "p50_ms": round(latencies[len(latencies) // 2] * 1000, 2),
            "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
            "door_cpu_ms": round((cpu1 - cpu0) * 1000 / max(accepted, 1), 3),
            "pg_cpu_ms": round((pg1 - pg0) * 1000 / max(accepted, 1), 3),
            "client_cpu_ms": round(client_cpu * 1000 / max(accepted, 1), 3),
            # how busy all the machine's cores were meanwhile (this run and anything else)
            "machine_busy": round((busy1 - busy0) / max(all1 - all0, 1), 2),
        }
        row["cpu_ms_per_accepted"] = round(float(row["door_cpu_ms"]) + float(row["pg_cpu_ms"]), 3)  # type: ignore[arg-type]
        print(f"{label:<28} {row['accepted_per_s']:>8}/s  p50 {row['p50_ms']} ms  p99 "
              f"{row['p99_ms']} ms  CPU/accepted {row['cpu_ms_per_accepted']} ms (door "
              f"{row['door_cpu_ms']} + PostgreSQL {row['pg_cpu_ms']}; load client "
              f"{row['client_cpu_ms']}); machine busy {row['machine_busy']:.0%}", file=sys.stderr)
        return row
    finally:
        stop(proc, grace=15)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=4000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--senders", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--no-relay", action="store_true", help="doors only")
    parser.add_argument("--no-door", action="store_true", help="relays only")
    parser.add_argument("--rate-limits", action="store_true",
                        help="doors count both rate limits (set too high to refuse anything): "
                             "in memory on SQLite, in the database on PostgreSQL")
    parser.add_argument("--threads", action="store_true",
                        help="the old load client: a thread per connection")
    parser.add_argument("--sqlite-durable", action="store_true",
                        help="also one SQLite door with serve --durable (an fsync per commit, "
                             "as PostgreSQL's defaults)")
    parser.add_argument("--pg-async", action="store_true",
                        help="also two workers on PostgreSQL with synchronous_commit=off")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every case this many times, interleaved (a shared machine's "
                             "load comes and goes); the figures are the medians")
    args = parser.parse_args()
    env, pg_pid = start_pg(durable_commit=True)
    url = env["MURETAI_TEST_PG"]
    cases: list[tuple[str, str | None, int, int | None, bool]] = [] if args.no_door else [
        ("1 process, SQLite", None, 1, None, False),
        ("1 process, PostgreSQL", url, 1, pg_pid, False),
        ("2 processes, PostgreSQL", url, 2, pg_pid, False)]
    if args.sqlite_durable and not args.no_door:
        cases.append(("1 process, SQLite --durable", None, 1, None, False))
    if not args.no_relay:
        cases += [("relay: 1 process, SQLite", None, 1, None, True),
                  ("relay: 1 process, PostgreSQL", url, 1, pg_pid, True),
                  ("relay: 2 processes, PostgreSQL", url, 2, pg_pid, True)]
    runs: dict[str, list[dict[str, object]]] = {label: [] for label, *_ in cases}
    try:
        for round_ in range(args.rounds):
            if args.rounds > 1:
                print(f"round {round_ + 1} of {args.rounds} (load {os.getloadavg()[0]:.2f})",
                      file=sys.stderr)
            for label, db, workers, pid, relay in cases:
                runs[label].append(run_case(label, db=db, workers=workers, pg_pid=pid,
                                            args=args, relay=relay,
                                            durable=label.endswith("--durable")))
    finally:
        stop_pg(env)
    if args.pg_async and not args.no_door:
        env, pg_pid = start_pg(durable_commit=False)
        label = "2 processes, PG async commit"
        try:
            runs[label] = [run_case(label, db=env["MURETAI_TEST_PG"], workers=2,
                                    pg_pid=pg_pid, args=args)]
        finally:
            stop_pg(env)
    rows = [median_row(r) for label, r in runs.items() if not label.startswith("relay")]
    relay_rows = [median_row(r) for label, r in runs.items() if label.startswith("relay")]
    # ratios per round (each round's cases ran back to back), then their median
    prefix = "relay: " if args.no_door else ""
    sqlite, two = runs[f"{prefix}1 process, SQLite"], runs[f"{prefix}2 processes, PostgreSQL"]
    speed = [f(b, "accepted_per_s") / f(a, "accepted_per_s")
             for a, b in zip(sqlite, two, strict=True)]
    cpu = [f(b, "cpu_ms_per_accepted") / f(a, "cpu_ms_per_accepted")
           for a, b in zip(sqlite, two, strict=True)]
    summary = {
        "bench": "scale",
        "rounds": args.rounds,
        "rows": rows,
        "relay_rows": relay_rows,
        "two_pg_over_one_sqlite": round(statistics.median(speed), 2),
        "cpu_two_pg_over_one_sqlite": round(statistics.median(cpu), 2),
        "per_round": [{"throughput": round(x, 2), "cpu": round(y, 2)}
                      for x, y in zip(speed, cpu, strict=True)],
        "targets": {"throughput_ratio_min": 1.2, "cpu_ratio_max": 1.5},
    }
    if args.rounds > 1:
        print("medians:", file=sys.stderr)
        for row in rows + relay_rows:
            print(f"  {row['case']:<30} {row['accepted_per_s']:>8}/s  CPU/accepted "
                  f"{row['cpu_ms_per_accepted']} ms (door {row['door_cpu_ms']} + PostgreSQL "
                  f"{row['pg_cpu_ms']})", file=sys.stderr)
    print(f"two on PostgreSQL / one on SQLite: throughput x{summary['two_pg_over_one_sqlite']}"
          f", CPU per accepted x{summary['cpu_two_pg_over_one_sqlite']} (median of "
          f"{args.rounds} round{'s' if args.rounds > 1 else ''}: "
          f"{', '.join(f'x{x:.2f}/x{y:.2f}' for x, y in zip(speed, cpu, strict=True))})",
          file=sys.stderr)
    print(json.dumps(summary))


def f(row: dict[str, object], key: str) -> float:
    """A figure of a row (every figure is a number)."""
    return float(row[key])  # type: ignore[arg-type]


def median_row(runs: list[dict[str, object]]) -> dict[str, object]:
    """One case's figures over its rounds: the median of each."""
    out: dict[str, object] = {"case": runs[0]["case"], "rounds": len(runs)}
    for key, value in runs[0].items():
        if isinstance(value, (int, float)):
            out[key] = round(statistics.median(f(r, key) for r in runs), 3)
    return out


if __name__ == "__main__":
    main()
