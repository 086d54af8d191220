"""Offline ``handoff check`` throughput next to raw Ed25519 verifications, in the same run.

Each check goes through the same library path as ``muretai handoff check --offline --card F``
(card bytes -> ``card_from_body`` -> ``OfflineCards`` -> ``check_handoff_bytes``), judging the
card afresh every time: two signatures (the card envelope and its contact grant), or three
when the card also carries an org membership.
Rounds are interleaved (check, raw, check, raw, ...) and medians reported.
The last line is one JSON summary.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ROUNDS = 7
TARGET = 0.3


def main() -> None:
    os.environ["MURETAI_HOME"] = tempfile.mkdtemp(prefix="muretai-bench-")
    from muretai_cli.artifacts.grant import mint_grant
    from muretai_cli.artifacts.org import attest_member
    from muretai_cli.home import PinStore, TrustList
    from muretai_cli.seam import SigningKey, sign_card_envelope
    from muretai_cli.urls import parse_base_url
    from muretai_cli.visit.card import card_from_body
    from muretai_cli.visit.handoff import OfflineCards, check_handoff_bytes

    now = int(time.time())
    door = SigningKey(b"\x42" * 32)
    org = SigningKey(b"\x43" * 32)
    origin = "https://shop.example.com/support"
    base = parse_base_url(origin)
    pins, trust = PinStore(), TrustList()
    result = json.dumps({"content": [{"type": "text", "text": "Ticket opened."}],
                         "_meta": {"handoff": {"v": 1, "next": [
                             {"kind": "dm", "to": door.did, "message": "About ticket 42",
                              "connect": origin}]}}}).encode()

    def card_bytes(with_org: bool) -> bytes:
        card = {"name": "Support", "url": origin, "did": door.did, "version": "1.0",
                "protocolVersion": "0.2", "capabilities": {}, "skills": [],
                "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
                "contact": mint_grant(door, uses=5, now=now)}
        if with_org:
            card["org"] = attest_member(org, member_did=door.did, org_name="Shop", now=now)
        return json.dumps(sign_card_envelope(door, card, now)).encode()

    def checker(raw_card: bytes) -> Callable[[], None]:
        def one_check() -> None:
            cards = OfflineCards(base, card_from_body(raw_card, "card"), now=now, pins=pins,
                                 trust=trust)
            report = check_handoff_bytes(result, cards, person=False, now=now)
            if report.exit_code != 0:
                raise SystemExit(f"bench setup is wrong: {report.to_json()}")
        return one_check

    check2, check3 = checker(card_bytes(False)), checker(card_bytes(True))
    # What `handoff check --offline --card F r1.json r2.json ...` does: the card is judged
    # once per command, then each result is checked against that verdict.
    batch_cards = OfflineCards(base, card_from_body(card_bytes(True), "card"), now=now,
                               pins=pins, trust=trust)

    def check_batch() -> None:
        if check_handoff_bytes(result, batch_cards, person=False, now=now).exit_code != 0:
            raise SystemExit("bench setup is wrong (batch)")
    private = Ed25519PrivateKey.from_private_bytes(b"\x44" * 32)
    public = private.public_key()
    message = b"x" * 200
    signature = private.sign(message)

    def one_verify() -> None:
        public.verify(signature, message)

    def rate(fn: Callable[[], None], seconds: float = 0.4) -> float:
        count, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds:
            for _ in range(20):
                fn()
            count += 20
        return count / elapsed

    for fn in (check2, check3, check_batch, one_verify):  # warm-up
        rate(fn, 0.2)
    runs: dict[str, list[float]] = {"check2": [], "check3": [], "batch": [], "raw": []}
    for _ in range(ROUNDS):
        runs["check2"].append(rate(check2))
        runs["raw"].append(rate(one_verify))
        runs["check3"].append(rate(check3))
        runs["batch"].append(rate(check_batch))
    c2, c3, batch, raw = (statistics.median(runs[k])
                          for k in ("check2", "check3", "batch", "raw"))
    print(f"raw Ed25519 verify (cryptography):        {raw:8.0f} /s", file=sys.stderr)
    print(f"handoff check, card + contact grant (2 sigs): {c2:8.0f} /s  ratio {c2 / raw:.3f}x",
          file=sys.stderr)
    print(f"handoff check, + org membership    (3 sigs): {c3:8.0f} /s  ratio {c3 / raw:.3f}x",
          file=sys.stderr)
    print(f"batch: card judged once per command, each result checked: {batch:8.0f} /s  "
          f"ratio {batch / raw:.3f}x", file=sys.stderr)
    print(f"target >= {TARGET}x; medians of {ROUNDS} interleaved rounds; the ceiling is "
          "1/signatures (0.5x, 0.333x)", file=sys.stderr)
    print(json.dumps({"bench": "handoff", "ed25519VerifiesPerSecond": round(raw),
                      "checksPerSecond2Sigs": round(c2), "ratio2Sigs": round(c2 / raw, 3),
                      "checksPerSecond3Sigs": round(c3), "ratio3Sigs": round(c3 / raw, 3),
                      "checksPerSecondBatch": round(batch),
                      "ratioBatch": round(batch / raw, 3), "target": TARGET,
                      "meetsTarget2Sigs": c2 / raw >= TARGET,
                      "meetsTarget3Sigs": c3 / raw >= TARGET, "rounds": ROUNDS}))


if __name__ == "__main__":
    main()
