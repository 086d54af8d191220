"""Bench: `muretai verify message - --json` over a long JSON Lines stdin keeps memory flat.

    .venv/bin/python bench/verify_report.py [--small 2000] [--big 20000]

Runs the real command (a child process, stdout to /dev/null) on a small and a big JSONL file
of signed ``message/send`` requests (1,000 distinct ones, repeated; verification keeps no
state), and, as a baseline in the same run, a child that only reads the big file and
``json.loads`` every line. Reports each child's peak RSS (``ru_maxrss`` from ``wait4``) and
wall time, and the ratios: memory big vs small (flat: about 1), memory vs the baseline, time
per line vs the baseline's. Not a test; prints one JSON line last.

The children run in a temporary folder, so ``PYTHONPATH=/path/to/another/checkout`` measures
that checkout's CLI instead (a before/after comparison).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from muretai_cli.artifacts.message import build_message, build_message_send
from muretai_cli.seam import SigningKey, sign_envelope

NOW = 1_784_273_681
DISTINCT = 1000
BASELINE = ("import json, sys\n"
            "for line in sys.stdin.buffer:\n"
            "    json.loads(line)\n")


def generate(path: Path, lines: int, me: SigningKey) -> None:
    senders = [SigningKey(bytes([i + 1]) * 32) for i in range(16)]
    pool = []
    for i in range(DISTINCT):
        env = sign_envelope(senders[i % 16], to=me.did, text=f"message {i}: " + "lorem " * (i % 9),
                            timestamp=NOW, context_id=f"ctx-{i % 7}")
        pool.append(json.dumps(build_message_send(build_message(env), i)))
    with path.open("w", encoding="utf-8") as fh:
        for i in range(lines):
            fh.write(pool[i % DISTINCT] + "\n")


def child(argv: list[str], stdin: Path) -> tuple[float, int, int]:
    """Wall seconds, peak RSS (KiB) and exit status of one child reading ``stdin``."""
    with stdin.open("rb") as fh:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=fh, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=stdin.parent)
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return took, usage.ru_maxrss, proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--big", type=int, default=20_000)
    args = parser.parse_args(argv)
    me = SigningKey(b"\xaa" * 32)
    verify = [sys.executable, "-m", "muretai_cli", "verify", "message", "-", "--to", me.did,
              "--now", str(NOW), "--json"]
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small.jsonl", Path(tmp) / "big.jsonl"
        generate(small, args.small, me)
        generate(big, args.big, me)
        base_t, base_rss, _ = child([sys.executable, "-c", BASELINE], big)
        _, small_rss, small_code = child(verify, small)
        big_t, big_rss, big_code = child(verify, big)
        size = big.stat().st_size
    if small_code or big_code:
        print(f"verify exited {small_code}/{big_code}, expected 0", file=sys.stderr)
        return 1
    load = os.getloadavg()
    summary = {
        "bench": "verify-report", "small_lines": args.small, "big_lines": args.big,
        "big_file_mb": round(size / 1e6, 1),
        "peak_rss_kib_small": small_rss, "peak_rss_kib_big": big_rss,
        "memory_ratio_big_vs_small": round(big_rss / small_rss, 2),
        "baseline_peak_rss_kib": base_rss,
        "memory_ratio_big_vs_baseline": round(big_rss / base_rss, 2),
        "lines_per_s": round(args.big / big_t),
        "baseline_lines_per_s": round(args.big / base_t),
        "time_ratio_vs_baseline": round(big_t / base_t, 1),
        "loadavg_1m": round(load[0], 2),
    }
    print(f"verify --json: {args.small:,} lines peak {small_rss / 1024:,.0f} MiB, {args.big:,} "
          f"lines peak {big_rss / 1024:,.0f} MiB (x{big_rss / small_rss:.2f}); "
          f"{args.big / big_t:,.0f} lines/s, {big_t / base_t:.0f}x a json.loads-only reader "
          f"({base_rss / 1024:,.0f} MiB); load {load[0]:.2f}", file=sys.stderr)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
