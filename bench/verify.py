"""Message-envelope verifications per second: ``verify_envelope`` next to raw ``cryptography``.

    .venv/bin/python bench/verify.py [--rounds 9] [--messages 2048]

A realistic mix: 64 distinct senders, messages pre-signed (signing is not measured). Three
contenders, interleaved round by round so machine noise hits them alike, medians reported:

    raw    Ed25519PublicKey.verify(sig, payload) on pre-built key objects and pre-made bytes
           (the floor: what OpenSSL costs, nothing else)
    warm   verify_envelope(env, to_did=...) with the DID->key cache warm (a busy door)
    cold   the same with the cache cleared before every message (each sender seen once)

The target is warm >= 0.85x raw. Prints human-readable lines, then one line of JSON.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from muretai_cli.seam import SigningKey, sign_envelope, signing_payload, verify_envelope
from muretai_cli.seam._didkey import _verifying_key

SENDERS = 64
TARGET = 0.85


def build(messages: int) -> tuple[str, list[dict[str, Any]], list[tuple[Any, bytes, bytes]]]:
    me = SigningKey(bytes([0xAA]) * 32)
    senders = [SigningKey(bytes([i]) * 31 + b"\x01") for i in range(SENDERS)]
    envs = []
    raw = []
    for i in range(messages):
        key = senders[i % SENDERS]
        text = f"message {i}: " + "lorem ipsum dolor sit amet " * (1 + i % 7)
        env = sign_envelope(key, to=me.did, text=text, timestamp=1784273681 + i,
                            context_id=None if i % 3 else f"ctx-{i % 11}")
        envs.append(env)
        raw.append((Ed25519PublicKey.from_public_bytes(key.public_bytes),
                    base64.b64decode(env["sig"]), signing_payload(env)))
    return me.did, envs, raw


def rate(fn: Callable[[], int]) -> float:
    gc.collect()
    start = time.perf_counter()
    count = fn()
    return count / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--messages", type=int, default=2048)
    args = parser.parse_args(argv)

    me, envs, raw = build(args.messages)

    def run_raw() -> int:
        for public, sig, payload in raw:
            public.verify(sig, payload)
        return len(raw)

    def run_warm() -> int:
        for env in envs:
            verify_envelope(env, to_did=me)
        return len(envs)

    def run_cold() -> int:
        clear = _verifying_key.cache_clear
        for env in envs:
            clear()
            verify_envelope(env, to_did=me)
        return len(envs)

    contenders = {"raw": run_raw, "warm": run_warm, "cold": run_cold}
    for fn in contenders.values():  # warm-up: caches, allocator, branch predictors
        fn()
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    for r in range(args.rounds):
        order = list(contenders)
        order = order[r % 3:] + order[:r % 3]  # rotate who goes first
        for name in order:
            rates[name].append(rate(contenders[name]))

    med = {name: statistics.median(values) for name, values in rates.items()}
    warm_ratio = med["warm"] / med["raw"]
    cold_ratio = med["cold"] / med["raw"]
    # per-round ratios: a noisy neighbour moves both numbers of a round together
    round_warm = statistics.median(w / r for w, r in zip(rates["warm"], rates["raw"],
                                                          strict=True))
    round_cold = statistics.median(c / r for c, r in zip(rates["cold"], rates["raw"],
                                                          strict=True))
    print(f"messages {args.messages} from {SENDERS} senders, {args.rounds} interleaved rounds")
    for name in contenders:
        spread = f"{min(rates[name]):,.0f}..{max(rates[name]):,.0f}"
        print(f"  {name:5} median {med[name]:>9,.0f} verifications/s   (range {spread})")
    print(f"  warm / raw = {warm_ratio:.3f}x  (median of per-round ratios {round_warm:.3f}x; "
          f"target >= {TARGET}x)")
    print(f"  cold / raw = {cold_ratio:.3f}x  (median of per-round ratios {round_cold:.3f}x)")
    summary = {
        "bench": "verify", "messages": args.messages, "senders": SENDERS,
        "rounds": args.rounds, "raw_per_s": round(med["raw"]), "warm_per_s": round(med["warm"]),
        "cold_per_s": round(med["cold"]), "warm_ratio": round(warm_ratio, 3),
        "cold_ratio": round(cold_ratio, 3), "warm_ratio_per_round": round(round_warm, 3),
        "cold_ratio_per_round": round(round_cold, 3), "target": TARGET,
        "meets_target": warm_ratio >= TARGET,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
