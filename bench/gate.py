"""Bench: what the trust gate costs the door's CPU per accepted first contact.

Two real doors (``muretai serve`` on loopback, SQLite, rate limits off), run side by side:

    introduced  policy ``introduced``; each message is a first contact from a fresh stranger
                carrying an introduction (``metadata.vc``) issued by one of the door
                identity's contacts (an allowed sender): verified, admitted as introduced,
                the sender recorded as a contact ("introduced by ...")
    quarantine  policy ``quarantine``; each message is a plain first knock from a fresh
                stranger: held for the owner's approval (the baseline)

The same number of messages each, pre-signed, sent in alternating rounds (ABBA order) over
a few keep-alive connections, so the machine's noise falls on both alike. The figure is the
server process's CPU per message (every thread's run time, /proc/<pid>/task/*/schedstat,
nanoseconds), and the ratio introduced / quarantine; the target is <= 1.10. The credentials
carry no ``issuerEndpoint`` and their issuers no relay: the door's revocation check costs
no network (docs/trust.md). Beside the ratio, the same run's raw Ed25519 verify (this
process, CPU time) gives the floor the credential's own signatures put under it (one for a
proactive credential, two for a requested one), and what the gate costs beyond them.
A quarantined door holds at most HELD_TOTAL messages, so the
run stays below it.

With ``--proposed`` the introducers first propose every credential to the door
(``introduce/propose``, as ``op introduce`` does before it gifts the credential; untimed,
PROPOSALS_PER_INTRODUCER at most each, so more introducers): the door verified each one
then, and the first contact that carries it again is not solved twice (docs/trust.md).

    python bench/gate.py [--messages 800] [--rounds 8] [--clients 4] [--proactive]
                         [--proposed]

Prints lines on stderr and one JSON line on stdout.
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from door import drive, keep_reading, request_bytes  # type: ignore[import-not-found]  # noqa: E402

from muretai_cli.artifacts.introduction import mint_introduction, mint_request  # noqa: E402
from muretai_cli.artifacts.message import build_message, build_message_send  # noqa: E402
from muretai_cli.artifacts.vouch import mint_proposal  # noqa: E402
from muretai_cli.inbox.store.receipts import HELD_TOTAL  # noqa: E402
from muretai_cli.seam import SigningKey, sign_envelope  # noqa: E402
from muretai_cli.seam._limits import PROPOSALS_PER_INTRODUCER  # noqa: E402
from muretai_cli.transport.children import muretai_argv, read_port, stop  # noqa: E402

TARGET = 1.10
ISSUERS = 4
WARMUP = 50


def run_ns(pid: int) -> int:
    """The CPU time every thread of ``pid`` has run, in nanoseconds."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended between the listing and the read
    return total


def verify_us() -> float:
    """One raw Ed25519 verify here, in microseconds of this thread's CPU (the floor of what
    a credential's signatures cost the door, measured in the same run)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    public, payload = key.public_key(), b'{"credentialSubject":{"expertise":["ledgers"]}}'
    sig = key.sign(payload)
    best = float("inf")
    for _ in range(5):
        start = time.thread_time()
        for _ in range(500):
            public.verify(sig, payload)
        best = min(best, (time.thread_time() - start) / 500 * 1e6)
    return best


def start_door(policy: str, contacts: list[str]) -> tuple[subprocess.Popen[bytes], int, str]:
    home = tempfile.mkdtemp(prefix=f"muretai-gate-{policy}-")
    env = {**os.environ, "MURETAI_HOME": home}
    subprocess.run(muretai_argv("id", "new", "door"), env=env, check=True, capture_output=True)
    for did in contacts:
        subprocess.run(muretai_argv("op", "--as", "door", "senders", "allow", did), env=env,
                       check=True, capture_output=True)
    did = json.loads(Path(home, "keys", "door.key").read_text())["did"]
    proc = subprocess.Popen(muretai_argv("serve", "--as", "door", "--url", "http://127.0.0.1",
                                         "--port", "0", "--dm-policy", policy,
                                         "--rate-per-sender", "0", "--rate-total", "0"),
                            env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            cwd=ROOT)
    if proc.stderr is None or (port := read_port(proc.stderr)) is None:
        stop(proc)
        raise SystemExit(f"the {policy} door did not start")
    keep_reading(proc.stderr)
    return proc, port, did


def first_contacts(count: int, door: str, issuers: list[SigningKey] | None,
                   proactive: bool, proposals: list[bytes] | None = None) -> list[bytes]:
    """``count`` first contacts from fresh strangers; with ``issuers``, each carries an
    introduction by one of them (``requested``, unless ``proactive``), and ``proposals``
    gets each credential's ``introduce/propose`` request."""
    now = int(time.time())
    out = []
    for i in range(count):
        sender = SigningKey.generate()
        env = sign_envelope(sender, to=door, text=f"hello, I am newcomer {i}", timestamp=now,
                            context_id=f"c-{i}")
        msg = build_message(env)
        if issuers is not None:
            issuer = issuers[i % len(issuers)]
            request = None if proactive else mint_request(
                sender, introducer=issuer.did, target=door, now=now - 60)
            vc = mint_introduction(issuer, subject=sender.did, to=door, now=now - 30,
                                   request=request, expertise=["ledgers", "rust"], trust=800)
            msg["metadata"]["vc"] = vc
            if proposals is not None:
                proposals.append(request_bytes(json.dumps(
                    {"jsonrpc": "2.0", "id": i, "method": "introduce/propose",
                     "params": mint_proposal(issuer, vc, to=door, now=now)},
                    separators=(",", ":")).encode()))
        body = json.dumps(build_message_send(msg, i), separators=(",", ":")).encode()
        out.append(request_bytes(body))
    return out


def send(pid: int, port: int, batch: list[bytes], clients: int, marker: bytes
         ) -> tuple[int, int]:
    """Send ``batch``; (server CPU ns spent, messages answered with ``marker``)."""
    shards = [batch[i::clients] for i in range(clients)]
    before = run_ns(pid)
    _, outcomes = drive(port, shards, marker)
    return run_ns(pid) - before, sum(outcomes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--proactive", action="store_true",
                        help="proactive credentials (one signature) instead of requested")
    parser.add_argument("--proposed", action="store_true",
                        help="each credential proposed to the door first (untimed)")
    args = parser.parse_args(argv)
    if args.messages + WARMUP > HELD_TOTAL:
        parser.error(f"--messages must leave room for the warm-up under HELD_TOTAL "
                     f"({HELD_TOTAL - WARMUP} at most)")
    count = ISSUERS if not args.proposed else -(-(args.messages + WARMUP)
                                               // PROPOSALS_PER_INTRODUCER)
    issuers = [SigningKey.generate() for _ in range(max(ISSUERS, count))]
    print(f"pre-signing 2 x {args.messages + WARMUP} first contacts...", file=sys.stderr)
    gated_proc, gated_port, gated_did = start_door("introduced", [k.did for k in issuers])
    plain_proc, plain_port, plain_did = start_door("quarantine", [])
    try:
        proposals: list[bytes] | None = [] if args.proposed else None
        gated = first_contacts(args.messages + WARMUP, gated_did, issuers, args.proactive,
                               proposals)
        plain = first_contacts(args.messages + WARMUP, plain_did, None, False)
        if proposals:
            print(f"proposing {len(proposals)} credentials to the door (untimed)...",
                  file=sys.stderr)
            _, ok = send(gated_proc.pid, gated_port, proposals, args.clients, b'"held"')
            if ok != len(proposals):
                raise SystemExit(f"{ok}/{len(proposals)} proposals were held")
        sides = {
            "introduced": (gated_proc.pid, gated_port, b'"result"'),
            "quarantine": (plain_proc.pid, plain_port, b'"requestId"'),
        }
        batches = {"introduced": gated, "quarantine": plain}
        for name, (pid, port, marker) in sides.items():  # warm both: imports, caches, pages
            _, ok = send(pid, port, batches[name][:WARMUP], args.clients, marker)
            if ok != WARMUP:
                raise SystemExit(f"{name}: {ok}/{WARMUP} warm-up messages went as expected")
        per = args.messages // args.rounds
        cpu = {"introduced": 0, "quarantine": 0}
        done = {"introduced": 0, "quarantine": 0}
        rounds: list[float] = []
        for r in range(args.rounds):
            order = ("introduced", "quarantine") if r % 2 == 0 else ("quarantine", "introduced")
            spent: dict[str, int] = {}
            for name in order:
                pid, port, marker = sides[name]
                start = WARMUP + r * per
                ns, ok = send(pid, port, batches[name][start:start + per], args.clients,
                              marker)
                if ok != per:
                    raise SystemExit(f"{name} round {r}: {ok}/{per} went as expected")
                spent[name] = ns
                cpu[name] += ns
                done[name] += per
            rounds.append(spent["introduced"] / spent["quarantine"])
        gated_us = cpu["introduced"] / done["introduced"] / 1000
        plain_us = cpu["quarantine"] / done["quarantine"] / 1000
        ratio = gated_us / plain_us
        rounds.sort()
        raw_us = verify_us()
        # the issuer's, and the embedded request's; none again for a proposed credential
        signatures = 0 if args.proposed else 1 if args.proactive else 2
        floor = (plain_us + signatures * raw_us) / plain_us
        summary: dict[str, Any] = {
            "ok": ratio <= TARGET,
            "bench": "gate",
            "credential": "proactive" if args.proactive else "requested",
            "proposedFirst": args.proposed,
            "messagesEach": done["introduced"],
            "rounds": args.rounds,
            "introducedCpuUsPerMessage": round(gated_us, 1),
            "quarantineCpuUsPerMessage": round(plain_us, 1),
            "ratio": round(ratio, 3),
            "roundRatioMin": round(rounds[0], 3),
            "roundRatioMax": round(rounds[-1], 3),
            "target": TARGET,
            "rawVerifyUs": round(raw_us, 1),
            "signaturesPerCredential": signatures,
            "signatureFloorRatio": round(floor, 3),
            "beyondSignaturesUsPerMessage": round(gated_us - plain_us - signatures * raw_us, 1),
        }
        print(f"introduced (admitted, {summary['credential']} vouch"
              f"{', proposed first' if args.proposed else ''}) {gated_us:.0f} us/msg; "
              f"quarantine (held knock) {plain_us:.0f} us/msg; ratio {ratio:.3f} "
              f"(rounds {rounds[0]:.3f}-{rounds[-1]:.3f}; target <= {TARGET}); raw Ed25519 "
              f"verify {raw_us:.0f} us here, so the credential's {signatures} signature(s) "
              f"alone put the floor at {floor:.3f}", file=sys.stderr)
        print(json.dumps(summary))
        return 0 if summary["ok"] else 1
    finally:
        stop(gated_proc)
        stop(plain_proc)


if __name__ == "__main__":
    sys.exit(main())
