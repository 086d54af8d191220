"""kill -9 of a real ``muretai serve`` loses nothing it answered as accepted; a restart serves
the same DID, grants and inbox (and still refuses a replay of what it accepted)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run, run_json
from tests.door_helpers import send_request
from tests.servers import running, start_serve


@contextmanager
def serve(tmp: Path, *args: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    with running(start_serve(tmp, "door", *args)) as door:
        yield door.proc, door.base


def test_kill_9_loses_no_accepted_message(tmp_path: Path) -> None:
    did = new_identity("door")
    grant = json.loads(run("contact", "issue", "--as", "door", "--uses", "4").stdout)
    alice = SigningKey.generate()
    accepted = []
    with serve(tmp_path, "--url", "http://127.0.0.1", "--dm-policy", "open") as (proc, base):
        card = httpx.get(base + "/.well-known/agent-card.json").json()
        assert card["did"] == did and card["contact"] == grant
        with httpx.Client(timeout=10) as client:
            for i in range(30):
                req = send_request(alice, did, f"message {i}")
                doc = client.post(base, json=req).json()
                if "result" in doc:
                    accepted.append(req)
        os.kill(proc.pid, signal.SIGKILL)  # no shutdown, no checkpoint
        proc.wait(timeout=10)
    assert len(accepted) == 30
    with serve(tmp_path, "--url", "http://127.0.0.1", "--dm-policy", "open") as (_proc, base):
        card = httpx.get(base + "/.well-known/agent-card.json").json()
        assert card["did"] == did and card["contact"] == grant
        doc = httpx.post(base, json=accepted[-1], timeout=10).json()
        # replay memory survived the crash: the exact repeat gets its kept reply, recovered
        assert doc["result"]["metadata"]["recovered"] is True
    code, inbox = run_json("op", "--as", "door", "inbox", "--all")
    assert code == 0
    assert sorted(m["text"] for m in inbox["messages"]) == sorted(
        r["params"]["message"]["parts"][0]["text"] for r in accepted)
    code, grants = run_json("contact", "grants", "--as", "door")
    assert [g["id"] for g in grants["grants"]] == [grant["id"]]


def test_serve_refuses_a_url_it_cannot_canonicalise() -> None:
    new_identity("door")
    for url, fix in (("https://Example.com/a?b=1", "https://example.com/a"),
                     ("https://example.com/a#frag", "https://example.com/a"),
                     ("http://example.com", "https://example.com")):
        result = run("serve", "--as", "door", "--url", url)
        assert result.exit_code == 2 and fix in result.stderr, result.stderr
    for url in ("https://user@example.com", "https://example.com/a/../b",
                "https://example.com/%2e/x", "https://exämple.com"):
        result = run("serve", "--as", "door", "--url", url)
        assert result.exit_code == 2 and "bad-url" in result.stderr


@pytest.mark.parametrize("expires", ["0d", "7x", "-1h"])
def test_contact_issue_refuses_bad_durations(expires: str) -> None:
    new_identity("door")
    result = run("contact", "issue", "--as", "door", "--uses", "1", "--expires", expires)
    assert result.exit_code == 2 and "bad-duration" in result.stderr


def test_serve_admission_flags_reach_the_server(tmp_path: Path) -> None:
    import socket

    new_identity("door")
    with serve(tmp_path, "--url", "http://127.0.0.1:9", "--max-connections", "3",
               "--max-per-client", "2", "--idle-seconds", "30") as (_, base):
        host, port = base.split("//", 1)[1].split(":")
        card = base + "/.well-known/agent-card.json"  # it answered it: running() waited
        held = [socket.create_connection((host, int(port)), timeout=5) for _ in range(2)]
        try:  # a third from the same address is past --max-per-client
            extra = socket.create_connection((host, int(port)), timeout=5)
            assert extra.recv(64).startswith(b"HTTP/1.1 503")
            extra.close()
        finally:
            for conn in held:
                conn.close()
        with httpx.Client() as client:  # their places are free again
            assert client.get(card).status_code == 200
