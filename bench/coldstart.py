"""Cold start: ``muretai did resolve <did>`` against a bare two-command Typer app.

    .venv/bin/python bench/coldstart.py [--runs 15]

The baseline is the floor the framework sets (Python + Typer + Click + the rendering it
loads); the target is muretai at <= 1.15x that floor. Both run as fresh processes with the
same interpreter, interleaved, so a noisy neighbour slows both alike; medians are reported.
Prints human-readable lines, then one line of JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.15
DID = "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"
ROOT = Path(__file__).resolve().parents[1]

BASELINE = '''\
import typer

app = typer.Typer(add_completion=False)


@app.command()
def resolve(did: str) -> None:
    """Echo a DID."""
    print(did)


@app.command()
def other(name: str) -> None:
    """A second command, so Typer builds a group as muretai does."""
    print(name)


if __name__ == "__main__":
    app()
'''


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-500:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)

    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(tmp) / "bare_typer_app.py"
        baseline.write_text(BASELINE)
        commands = {
            "baseline": [python, str(baseline), "resolve", DID],
            "muretai": [python, "-m", "muretai_cli", "did", "resolve", DID],
        }
        for cmd in commands.values():  # warm the page cache and .pyc files
            timed(cmd)
            timed(cmd)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for i in range(args.runs):
            order = list(commands) if i % 2 == 0 else list(reversed(commands))
            for name in order:
                times[name].append(timed(commands[name]))

    med = {name: statistics.median(values) for name, values in times.items()}
    ratio = med["muretai"] / med["baseline"]
    pair_ratio = statistics.median(m / b for m, b in zip(times["muretai"], times["baseline"],
                                                         strict=True))
    print(f"{args.runs} interleaved runs each, {python}")
    for name, values in times.items():
        print(f"  {name:8} median {med[name] * 1000:7.1f} ms   "
              f"(range {min(values) * 1000:.1f}..{max(values) * 1000:.1f} ms)")
    print(f"  muretai / baseline = {ratio:.3f}x  (median of paired ratios {pair_ratio:.3f}x; "
          f"target <= {TARGET}x)")
    print(json.dumps({
        "bench": "coldstart", "runs": args.runs,
        "baseline_ms": round(med["baseline"] * 1000, 1),
        "muretai_ms": round(med["muretai"] * 1000, 1),
        "ratio": round(ratio, 3), "ratio_paired": round(pair_ratio, 3), "target": TARGET,
        "meets_target": ratio <= TARGET,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
