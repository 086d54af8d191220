"""Bench: door CPU per accepted message signed by an op key with its KeyState inline (the
sender pinned after its first), against a root-signed message, in the same run.

One real ``muretai serve`` (SQLite, policy open, rate limits off). Two pre-signed loads from
distinct senders: root-signed messages, and messages from a root DID signed by the op key a
root-signed KeyState in ``metadata.keystate`` delegates. Every op sender's first message is
sent in the warm-up, so what is measured is the pinned case. The loads alternate in rounds
(root, op, root, op, ...) on the same server, so a noisy neighbour slows both alike; the
server's own CPU time is read from /proc/<pid>/stat around each round. The figure is the
ratio of the medians of CPU per accepted message; the target is <= 1.2.

    python bench/opkey.py [--messages 2000] [--rounds 6] [--clients 8] [--senders 200]

Prints a few lines on stderr and one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from door import cpu_seconds, drive, keep_reading, request_bytes  # noqa: E402

from muretai_cli.artifacts.keystate import mint_keystate  # noqa: E402
from muretai_cli.artifacts.message import (  # noqa: E402
    Delegated,
    build_message_send,
    signed_message,
)
from muretai_cli.seam import SigningKey  # noqa: E402

TARGET = 1.2


def start_door(home: str) -> tuple[subprocess.Popen[bytes], int, str]:
    env = {**os.environ, "MURETAI_HOME": home}
    subprocess.run([sys.executable, "-m", "muretai_cli", "id", "new", "door"], env=env,
                   check=True, capture_output=True)
    did = json.loads(Path(home, "keys", "door.key").read_text())["did"]
    proc = subprocess.Popen([sys.executable, "-m", "muretai_cli", "serve", "--as", "door",
                             "--url", "http://127.0.0.1", "--port", "0", "--dm-policy", "open",
                             "--rate-per-sender", "0", "--rate-total", "0"],
                            env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            cwd=ROOT)
    assert proc.stderr is not None
    port = 0
    while not port:
        line = proc.stderr.readline().decode()
        if not line:
            raise SystemExit("the door did not start")
        found = re.search(r"listening on http://[0-9.]+:([0-9]+)", line)
        port = int(found.group(1)) if found else 0
    keep_reading(proc.stderr)
    return proc, port, did


def bodies(keys: list[SigningKey | Delegated], door: str, count: int, tag: str) -> list[bytes]:
    now = int(time.time())
    out = []
    for i in range(count):
        message = signed_message(keys[i % len(keys)], to=door, now=now,
                                 text=f"bench {tag} {i}: hello door", context_id=f"c-{i % 97}")
        out.append(request_bytes(json.dumps(build_message_send(message, i),
                                            separators=(",", ":")).encode()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000, help="per kind per round")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--senders", type=int, default=200)
    args = parser.parse_args()

    proc, port, door = start_door(tempfile.mkdtemp(prefix="muretai-bench-opkey-"))
    try:
        roots: list[SigningKey | Delegated] = [SigningKey.generate()
                                               for _ in range(args.senders)]
        ops: list[SigningKey | Delegated] = []
        for _ in range(args.senders):
            root, op = SigningKey.generate(), SigningKey.generate()
            record = mint_keystate(root, op_did=op.did, epoch=1, now=int(time.time()))
            ops.append(Delegated(op, root.did, record))
        print(f"pre-signing {2 * args.messages * args.rounds} messages...", file=sys.stderr)
        warm = bodies(roots, door, args.senders, "warm-root") + \
            bodies(ops, door, args.senders, "warm-op")  # every op sender pinned here
        _, ok = drive(port, [warm[i::args.clients] for i in range(args.clients)])
        if sum(ok) != len(warm):
            raise SystemExit(f"warm-up: {len(warm) - sum(ok)} of {len(warm)} not accepted")
        loads = {kind: [bodies(keys, door, args.messages, f"{kind}-{r}")
                        for r in range(args.rounds)]
                 for kind, keys in (("root", roots), ("op", ops))}
        per_kind: dict[str, list[float]] = {"root": [], "op": []}
        for r in range(args.rounds):
            for kind in ("root", "op") if r % 2 == 0 else ("op", "root"):
                load = loads[kind][r]
                cpu0 = cpu_seconds(proc.pid)
                _, outcomes = drive(port, [load[i::args.clients] for i in range(args.clients)])
                cpu1 = cpu_seconds(proc.pid)
                accepted = sum(outcomes)
                if accepted != len(load):
                    raise SystemExit(f"{kind} round {r}: {len(load) - accepted} refused")
                per_kind[kind].append((cpu1 - cpu0) * 1000 / accepted)
        root_ms = statistics.median(per_kind["root"])
        op_ms = statistics.median(per_kind["op"])
        summary = {
            "bench": "opkey", "rounds": args.rounds, "messages_per_round": args.messages,
            "clients": args.clients, "senders": args.senders,
            "root_cpu_ms_per_accepted": round(root_ms, 4),
            "op_cpu_ms_per_accepted": round(op_ms, 4),
            "ratio": round(op_ms / root_ms, 3), "target_ratio": TARGET,
            "per_round_ms": {k: [round(v, 4) for v in vs] for k, vs in per_kind.items()},
        }
        print(f"door CPU per accepted: root-signed {root_ms:.4f} ms, op key + inline "
              f"KeyState (pinned) {op_ms:.4f} ms: {op_ms / root_ms:.3f}x (target <= "
              f"{TARGET}x)", file=sys.stderr)
        print(json.dumps(summary))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
