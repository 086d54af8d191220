"""The inbox read by cursor: "newest 50 after a cursor" at 100,000 messages vs at 1,000, and
how soon a waiting reader is woken by another process's commit (SQLite store).

    .venv/bin/python bench/inbox_cursor.py [--runs 200] [--wakes 20]

Both stores are filled in the same run (rows written straight into the inbox table, as a
door's accept writes them) and read interleaved, so a noisy neighbour slows both alike; the
target is a ratio <= 2. The wake is from the commit (the writer process's clock after
COMMIT, CLOCK_MONOTONIC is system-wide) to ``wait_after`` returning: median <= 50 ms.
Prints human-readable lines, then one line of JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from muretai_cli.inbox.reader import read_after, wait_after
from muretai_cli.inbox.store import IdentityStore

TARGET_RATIO = 2.0
TARGET_WAKE_MS = 50.0
_INSERT = ("INSERT INTO inbox (sender, message_id, context_id, text, sent, received, "
           "verified, via, channel) VALUES (?, ?, ?, ?, 1800000000, 1800000000, 1, "
           "'direct', 'door')")


def filled(where: Path, count: int) -> IdentityStore:
    store = IdentityStore(where)
    with store.db.transaction() as tx:
        for i in range(count):
            tx.execute(_INSERT, (f"did:key:peer{i % 37}", f"m-{i}", f"c-{i % 101}",
                                 "hello " * 8))
    return store


def read_seconds(store: IdentityStore, runs: int) -> list[float]:
    cursor = store.latest_seq() - 50
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        page = read_after(store, cursor, limit=50)
        out.append(time.perf_counter() - started)
        assert len(page.entries) == 50
    return out


_WRITER = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
c.execute({insert!r}, ("did:key:late", sys.argv[2], "c-late", "late"))
c.execute("COMMIT")
print(time.monotonic())
"""


def _waiter(store: IdentityStore, cursor: int, woke: list[float]) -> None:
    wait_after(store, cursor, timeout=10)
    woke.append(time.monotonic())


def wake_ms(where: Path, store: IdentityStore, wakes: int) -> list[float]:
    out = []
    for n in range(wakes):
        woke: list[float] = []
        thread = threading.Thread(target=_waiter, args=(store, store.latest_seq(), woke))
        thread.start()
        time.sleep(0.2)  # the bench, not a test: let the waiter settle into its wait
        done = subprocess.run([sys.executable, "-c", _WRITER.format(insert=_INSERT),
                               str(where), f"late-{n}"], capture_output=True, text=True,
                              check=True)
        thread.join()
        out.append((woke[0] - float(done.stdout)) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--wakes", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small = filled(Path(tmp) / "small.sqlite3", 1_000)
        big = filled(Path(tmp) / "big.sqlite3", 100_000)
        smalls: list[float] = []
        bigs: list[float] = []
        for _ in range(max(1, args.runs // 20)):  # interleaved rounds
            smalls += read_seconds(small, 20)
            bigs += read_seconds(big, 20)
        s_ms, b_ms = statistics.median(smalls) * 1000, statistics.median(bigs) * 1000
        ratio = b_ms / s_ms
        wakes = wake_ms(Path(tmp) / "big.sqlite3", big, args.wakes)
        wake = statistics.median(wakes)
        small.close()
        big.close()
    print(f"newest 50 after a cursor, 1,000 messages:   {s_ms:.3f} ms (median)")
    print(f"newest 50 after a cursor, 100,000 messages: {b_ms:.3f} ms (median)")
    print(f"ratio {ratio:.2f} (target <= {TARGET_RATIO})")
    print(f"wake after another process's commit: {wake:.1f} ms median, "
          f"{max(wakes):.1f} ms max (target median <= {TARGET_WAKE_MS:g} ms)")
    print(json.dumps({"smallMs": round(s_ms, 4), "bigMs": round(b_ms, 4),
                      "ratio": round(ratio, 3), "wakeMedianMs": round(wake, 2),
                      "wakeMaxMs": round(max(wakes), 2),
                      "ok": ratio <= TARGET_RATIO and wake <= TARGET_WAKE_MS}))


if __name__ == "__main__":
    main()
