"""Small inconsistencies a new user met (issue 22, item 15), each checked on real parts: one
name for a held request's id, the effective policy in `serve --json`, a malformed DID as a
usage error in `did resolve` as everywhere, private -wal/-shm files beside a door's SQLite
store. (`handoff check`'s signed default: tests/test_handoff_check.py.)"""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

from tests.cli_helpers import in_process, new_identity
from tests.servers import ServeProc, running, start_serve, wait_until


def _door(tmp_path: Path, *args: str, stdout: Path | None = None) -> ServeProc:
    """``muretai serve --as door`` whose card names where it listens (a free port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return start_serve(tmp_path, "door", "--url", f"http://127.0.0.1:{port}", "--port",
                       str(port), *args, stdout=stdout)


def _listening_event(path: Path) -> dict[str, object]:
    wait_until(lambda: path.exists() and path.read_text().strip(), "serve --json said listening")
    event: dict[str, object] = json.loads(path.read_text().splitlines()[0])
    return event


def test_a_held_request_is_named_request_id_everywhere(tmp_path: Path) -> None:
    door = new_identity("door")
    new_identity("vis")
    with running(_door(tmp_path)) as served:
        sent = in_process("op", "--as", "vis", "dm", door, "knock knock", "--card-url",
                       served.base, "--json")
        assert sent.returncode == 0, sent.stderr
        held = json.loads(sent.stdout)
        assert held["state"] == "held" and held["requestId"]
        listed = json.loads(in_process("op", "--as", "door", "requests", "list", "--json").stdout)
        row = listed["requests"][0]
        assert row["requestId"] == held["requestId"]
        assert row["id"] == row["requestId"]   # the earlier name, still read by scripts
        approved = json.loads(in_process("op", "--as", "door", "requests", "approve",
                                      held["requestId"], "--json").stdout)
        assert approved["ok"] is True and approved["requestId"] == held["requestId"]


def test_serve_json_names_the_policy_in_force(tmp_path: Path) -> None:
    new_identity("door")
    out = tmp_path / "events.jsonl"
    with running(_door(tmp_path, "--json", stdout=out)) as served:
        event = _listening_event(out)
        said = served.log.read_text()
    assert event["event"] == "listening"
    assert event["policy"] == "quarantine" and "policy quarantine" in said
    out2 = tmp_path / "events2.jsonl"
    with running(_door(tmp_path, "--json", "--dm-policy", "open", stdout=out2)):
        assert _listening_event(out2)["policy"] == "open"


def test_did_resolve_of_a_malformed_did_is_a_usage_error() -> None:
    for bad in ("did:key:znope", "notadid", "did:web:example.com"):
        proc = in_process("did", "resolve", bad)
        assert proc.returncode == 2, (bad, proc.stderr)
        assert "bad-did" in proc.stderr and proc.stdout == ""
        doc = json.loads(in_process("did", "resolve", bad, "--json").stdout)
        assert doc["ok"] is False and doc["error"] == "bad-did"
    new_identity("me")
    dm = in_process("op", "--as", "me", "dm", "did:key:znope", "hi")
    assert dm.returncode == 2, "the same exit as op dm gives the same mistake"


def test_a_door_stores_wal_and_shm_files_private(tmp_path: Path) -> None:
    door = new_identity("door")
    new_identity("vis")
    home = Path(os.environ["MURETAI_HOME"])
    with running(_door(tmp_path, "--dm-policy", "open")) as served:
        sent = in_process("op", "--as", "vis", "dm", door, "hello", "--card-url", served.base)
        assert sent.returncode == 0, sent.stderr
        wal = sorted(home.rglob("*-wal")) + sorted(home.rglob("*-shm"))
        assert wal, f"no -wal/-shm under {home}"
        modes = {p.relative_to(home).as_posix(): oct(stat.S_IMODE(p.stat().st_mode))
                 for p in wal}
    assert set(modes.values()) == {"0o600"}, modes


def test_an_earlier_releases_open_wal_files_are_made_private(tmp_path: Path) -> None:
    from muretai_cli.db._sqlite import SqliteDatabase

    path = tmp_path / "old.sqlite3"
    db = SqliteDatabase(path)
    db.execute("CREATE TABLE t (x)")
    db.execute("INSERT INTO t VALUES (1)")
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        p.chmod(0o644)     # as 0.x left them
    again = SqliteDatabase(path)
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in tmp_path.glob("old.*")}
    again.close()
    db.close()
    assert set(modes.values()) == {"0o600"}, modes
