"""``muretai relay serve`` as a real process: kill -9 loses nothing it answered ``queued``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from muretai_cli.seam import SigningKey, open_box
from tests.cli_helpers import run
from tests.relay_helpers import deposit_body, listen_body
from tests.servers import running, start_relay
from tests.waiting import wait_until

URL = "http://127.0.0.1:1/relay"  # what tokens name; the process binds an ephemeral port
ORIGIN = "http://127.0.0.1:1"


@contextmanager
def relay_process(db: Path, *args: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    with running(start_relay(db.parent, "--url", URL, "--db", str(db), *args)) as relay:
        yield relay.proc, relay.base + "/relay"


@pytest.mark.slow
def test_kill_9_delivers_every_queued_deposit_once(tmp_path: Path) -> None:
    db = tmp_path / "relay.sqlite3"
    senders = [SigningKey.generate() for _ in range(3)]
    bob = SigningKey.generate()
    queued: list[str] = []
    with relay_process(db, "--rate-per-sender", "0", "--rate-per-mailbox", "0") as (proc, base):

        def deposit_until_killed(sender: SigningKey) -> None:
            with httpx.Client(timeout=5) as client:
                for i in range(400):
                    body = deposit_body(sender, bob, f"{i}")
                    try:
                        resp = client.post(base + "/send", json=body)
                    except httpx.TransportError:
                        return  # the relay is gone: this one may or may not have landed
                    if resp.status_code == 200 and resp.json().get("queued") is True:
                        queued.append(body["id"])

        threads = [threading.Thread(target=deposit_until_killed, args=(s,)) for s in senders]
        for thread in threads:
            thread.start()
        # a stalled relay fails the test, never hangs the run
        wait_until(lambda: len(queued) >= 40 or not any(t.is_alive() for t in threads),
                   "the relay queued 40 deposits", timeout=60, interval=0.005)
        assert len(queued) >= 40, "every sender stopped before 40 deposits were queued"
        os.kill(proc.pid, signal.SIGKILL)  # mid-stream: no shutdown, no checkpoint
        for thread in threads:
            thread.join(timeout=20)
    assert 40 <= len(queued) < 1200
    with relay_process(db) as (_proc, base):
        seen: list[str] = []
        for epoch in range(1, 100):
            body = listen_body(bob, ORIGIN, epoch=epoch, wait=0)
            doc = httpx.post(base + "/listen", json=body, timeout=10).json()
            seen += [m["id"] for m in doc["messages"]]
            assert all(open_box(bob, m["from_enc"], m["blob"], ad=b"") is not None
                       for m in doc["messages"])
            ids = [m["id"] for m in doc["messages"]]
            assert httpx.post(base + "/ack", json=body | {"ids": ids},
                              timeout=10).json() == {"acked": len(ids)}
            if not doc["more"]:
                break
    assert len(seen) == len(set(seen))  # once
    assert set(queued) <= set(seen)  # every one answered queued
    assert len(seen) - len(queued) <= len(senders)  # at most the deposits in flight


def test_serve_runs_on_the_shared_transport_with_its_flags(tmp_path: Path) -> None:
    alice, bob = SigningKey.generate(), SigningKey.generate()
    # --slow-seconds wide enough that, on a loaded machine, the second connection arrives
    # while the first still holds the one place (0.5 s let the 408 come first: a 200)
    with relay_process(tmp_path / "relay.sqlite3", "--slow-seconds", "3",
                       "--max-per-client", "1") as (_proc, base):
        port = int(base.split(":")[2].split("/")[0])
        # read within 8 s: before the default 10 s deadline, so the flag is what cut it
        with socket.create_connection(("127.0.0.1", port), timeout=8) as slow:
            slow.sendall(b"POST /relay/send HTTP/1.1\r\nHost: x\r\n")  # and no more
            # its one place is taken: the next connection from this address is refused
            assert httpx.post(base + "/send", json=deposit_body(alice, bob),
                              timeout=5).status_code == 503
            assert slow.recv(4096).startswith(b"HTTP/1.1 408")  # cut at --slow-seconds
        status = wait_until(lambda: (s := httpx.post(base + "/send", json=deposit_body(
            alice, bob), timeout=5).status_code) != 503 and s,
                            "the slow client's place is given back", timeout=10, interval=0)
        assert status == 200


@pytest.mark.parametrize("args", [
    ["--url", "http://relay.example"],  # plain http off loopback
    ["--url", "https://relay.example/?q"],
    ["--url", "https://relay.example", "--max-waiting", "0"],
    ["--url", "https://relay.example", "--rate-per-sender", "-1"],
    ["--url", "https://relay.example", "--expire", "soon"],
    ["--url", "https://relay.example", "--port", "70000"],
    ["--url", "https://relay.example", "--max-per-client", "-1"],
    ["--url", "https://relay.example", "--idle-seconds", "0"],
])
def test_serve_refuses_bad_flags_before_binding(args: list[str]) -> None:
    result = run("relay", "serve", *args)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
