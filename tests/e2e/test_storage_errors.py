"""Write errors other than a full disk (EIO, EFBIG, a quota) are "storage unavailable":
the door and the relay answer 503 with Retry-After (nothing committed, retry), a command
exits 3; a store whose table was dropped is a named error; a value PostgreSQL cannot hold
(a NUL in ack ids) is a 4xx refusal. Never ``bad-database`` for the disk's doing, never a
traceback.

The failing write is real: the server runs with a file-size limit (``RLIMIT_FSIZE``), so
SQLite's write past it fails with EFBIG, which SQLite reports as ``SQLITE_IOERR_WRITE``
(as it does EIO and EDQUOT).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from muretai_cli.inbox.store import db_path
from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door, send_request
from tests.relay_helpers import deposit_body, listen_body, live_relay
from tests.servers import READY_PATHS, ROOT, ServeProc, running

LIMIT = 1 << 20  # bytes any file the server writes may grow to
BIG = "x" * 60_000  # a message (under the 64 KiB text cap) that grows the WAL by ~60 KB


# Sets the limit, then becomes ``python -m muretai_cli ARGV`` (no preexec_fn: the test
# process has threads). Python ignores SIGXFSZ, so a write past the limit fails with EFBIG.
_LIMITED = ("import os, resource, sys; n = int(sys.argv[1]); "
            "resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); "
            "os.execv(sys.executable, [sys.executable, '-m', 'muretai_cli', *sys.argv[2:]])")


def limited(limit: int, *argv: str) -> list[str]:
    """The command line of ``muretai ARGV`` whose files cannot grow past ``limit`` bytes."""
    return [sys.executable, "-c", _LIMITED, str(limit), *argv]


def start_limited(tmp: Path, kind: str, *argv: str) -> ServeProc:
    log = tmp / f"{kind}-limited.log"
    proc = subprocess.Popen(limited(LIMIT, *argv), stdout=subprocess.DEVNULL,
                            stderr=log.open("wb"), cwd=ROOT, env=os.environ.copy())
    return ServeProc(proc, log, ready_path=READY_PATHS[kind])


def test_a_door_whose_disk_refuses_a_write_answers_503_and_a_command_exits_3(
        tmp_path: Path) -> None:
    did = new_identity("bob")
    sender = SigningKey.generate()
    door = start_limited(tmp_path, "serve", "serve", "--as", "bob", "--url",
                         "http://127.0.0.1:1", "--port", "0", "--dm-policy", "open",
                         "--rate-per-sender", "0", "--rate-total", "0")
    with running(door), httpx.Client(timeout=20) as client:
        for _ in range(3 * LIMIT // len(BIG)):
            resp = client.post(door.base + "/", json=send_request(sender, did, BIG))
            if resp.status_code != 200 or "error" in resp.json():
                break
        else:
            pytest.fail("every write fitted under the limit: nothing was tested")
        assert resp.status_code == 503, resp.text
        assert resp.headers["retry-after"] == "1"
        assert resp.json()["error"]["data"]["reason"] == "database-unavailable"
        # The next visitor is told the same, and the door is still serving.
        again = client.post(door.base + "/", json=send_request(sender, did, BIG))
        assert again.status_code == 503
    log = door.log.read_text()
    assert "could not take a write" in log and "SQLITE_IOERR" in log, log
    assert "Traceback" not in log and "bad-database" not in log, log
    # A command writing to the same store when no file may grow past one page: exit 3.
    done = subprocess.run(limited(4096, "op", "--as", "bob", "senders", "block",
                                  SigningKey.generate().did),
                          capture_output=True, text=True, cwd=ROOT, env=os.environ.copy(),
                          timeout=60, check=False)
    assert done.returncode == 3, done.stderr
    assert "storage-unavailable" in done.stderr and "Traceback" not in done.stderr


def test_a_relay_whose_disk_refuses_a_write_answers_503(tmp_path: Path) -> None:
    bob = SigningKey.generate()
    relay = start_limited(tmp_path, "relay", "relay", "serve", "--url", "http://127.0.0.1:1",
                          "--port", "0", "--db", str(tmp_path / "relay.sqlite3"),
                          "--rate-per-sender", "0", "--rate-per-mailbox", "0")
    text = "x" * 150_000  # sealed, ~200 KB of base64 under the 256 KiB blob cap
    with running(relay), httpx.Client(timeout=20) as client:
        for _ in range(3 * LIMIT // len(text)):
            sender = SigningKey.generate()
            resp = client.post(relay.base + "/send", json=deposit_body(sender, bob, text))
            if resp.status_code != 200:
                break
        else:
            pytest.fail("every deposit fitted under the limit: nothing was tested")
        assert resp.status_code == 503, resp.text
        assert resp.headers["retry-after"] == "1" and resp.json()["error"] == "unavailable"
    log = relay.log.read_text()
    assert "Traceback" not in log and "internal" not in log, log


def test_a_door_store_with_a_dropped_table_is_named(capfd: pytest.CaptureFixture[str]) -> None:
    with live_door(name="bob") as door:
        sqlite3.connect(db_path(door.did)).execute("DROP TABLE inbox")
        resp = door.post(send_request(SigningKey.generate(), door.did, "hello"))
        assert resp.status_code == 503 and resp.headers["retry-after"] == "1", resp.text
    logged = capfd.readouterr().err  # the door's log (uvicorn's logger, on stderr)
    assert "is damaged: no such table: inbox" in logged and "Traceback" not in logged, logged
    shown = run("op", "--as", "bob", "inbox")
    assert shown.exit_code == 2
    assert "bad-database" in shown.stderr and "no such table: inbox" in shown.stderr


def test_a_relay_store_with_a_dropped_table_answers_503(tmp_path: Path) -> None:
    bob, alice = SigningKey.generate(), SigningKey.generate()
    path = tmp_path / "relay.sqlite3"
    with live_relay(path) as relay:
        sqlite3.connect(path).execute("DROP TABLE relay_messages")
        resp = relay.post("send", deposit_body(alice, bob))
    assert resp.status_code == 503 and resp.headers["retry-after"] == "1", resp.text


def test_a_nul_in_ack_ids_on_postgresql_is_a_400(pg_url: str) -> None:
    from muretai_cli.relay.store import RelayStore

    bob = SigningKey.generate()
    with live_relay(pg_url) as relay:
        resp = relay.post("ack", listen_body(bob, relay.origin) | {"ids": ["a\x00b"]})
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"] == "malformed" and "NUL" in resp.json()["message"]
        # The relay goes on serving the same mailbox.
        assert relay.ack(bob, ["no-such-id"]).status_code == 200
    RelayStore.open(pg_url).close()


def test_a_file_write_the_disk_refuses_is_storage_unavailable_not_the_files_fault() -> None:
    # A new identity's key file cannot grow past 16 bytes: EFBIG, not a wrong path or mode.
    done = subprocess.run(limited(16, "id", "new", "carol"), capture_output=True, text=True,
                          cwd=ROOT, env=os.environ.copy(), timeout=60, check=False)
    assert done.returncode == 3, done.stderr
    assert "storage-unavailable" in done.stderr and "unwritable" not in done.stderr
    assert "Traceback" not in done.stderr
