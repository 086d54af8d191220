"""Issue 13 §3: a full disk, an unreadable key file, a database path that is a directory and a
damaged inbox row each end in one clear line and the right exit code, never a traceback."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from muretai_cli.cli import app
from muretai_cli.db import DatabaseFull
from muretai_cli.errors import DiskFull, InputError
from muretai_cli.home import KeyStore, atomic_write, keys_dir
from muretai_cli.inbox.store import IdentityStore, db_path
from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run
from tests.door_helpers import send_request


def _cli(*args: str) -> Any:
    """The CLI in-process, exceptions caught: a traceback shows as ``result.exception``."""
    return CliRunner().invoke(app, list(args))


def _no_space(*_: object, **__: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


# --- a full disk -------------------------------------------------------------------------

def test_id_new_on_a_full_disk_says_disk_full_and_leaves_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    new_identity("alice")  # the keys folder exists; the next write finds no space
    monkeypatch.setattr("muretai_cli.home._files.os.fsync", _no_space)
    result = _cli("id", "new", "bob")
    assert result.exit_code == 3 and not isinstance(result.exception, OSError), result.exception
    assert result.stderr.startswith("error: disk-full: the disk holding ")
    assert "move it aside" not in result.stderr
    assert sorted(p.name for p in keys_dir().iterdir()) == [".gitignore", "alice.key"]
    result = _cli("id", "new", "carol", "--json")
    assert result.exit_code == 3 and json.loads(result.stdout)["error"] == "disk-full"


def test_atomic_write_names_a_write_it_could_not_do(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError) as info:
        atomic_write(tmp_path / "missing-folder" / "state.json", b"{}")
    assert info.value.code == "unwritable"
    monkeypatch.setattr("muretai_cli.home._files.os.fsync", _no_space)
    with pytest.raises(DiskFull):
        atomic_write(tmp_path / "state.json", b"{}")
    assert list(tmp_path.iterdir()) == []  # not even the temporary file


def _fill(store: IdentityStore) -> None:
    # SQLite's own SQLITE_FULL ("database or disk is full"): no page may be added
    pages = store.db.one("PRAGMA page_count")
    assert pages is not None
    store.db.execute(f"PRAGMA max_page_count = {int(pages[0])}")


def test_a_full_disk_under_the_door_store_is_disk_full_and_the_door_answers_503() -> None:
    from muretai_cli.door.core import UNAVAILABLE, Door, DoorConfig
    from muretai_cli.urls import parse_base_url

    key = SigningKey(b"\x0b" * 32)
    store = IdentityStore(db_path(key.did))
    door = Door(key, DoorConfig(name="door", url=parse_base_url("http://127.0.0.1:9"),
                                policy="open", rate_per_sender=0, rate_total=0), store)
    big = "x" * 60_000  # more than the free room in the file's last pages
    assert door.handle_post(json.dumps(send_request(SigningKey.generate(), key.did)).encode()
                            )[0] == 200
    _fill(store)
    with pytest.raises(DatabaseFull) as info:
        store.set_setting("filler", big)
    assert info.value.code == "disk-full" and "move it aside" not in info.value.diagnostics()
    answer = door.handle_post(json.dumps(send_request(SigningKey.generate(), key.did,
                                                      big)).encode())
    assert answer == UNAVAILABLE
    assert store.setting("filler") is None  # nothing half-written, and the store still reads


def test_op_commands_on_a_full_disk_say_disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    new_identity("alice")
    assert _cli("op", "inbox", "--as", "alice").exit_code == 0
    real_connect = sqlite3.connect

    def full(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = real_connect(*args, **kwargs)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    monkeypatch.setattr("muretai_cli.db._sqlite.sqlite3.connect", full)
    result = _cli("op", "contact", "issue", "--as", "alice", "--uses", "1",
                  "--purpose", "p" * 60_000)
    assert result.exit_code == 3, (result.exception, result.stderr)
    assert result.stderr.startswith("error: disk-full: the disk holding ")
    assert "move it aside" not in result.stderr


UNSHARE = shutil.which("unshare")


def _full_tmpfs_works() -> bool:
    if UNSHARE is None or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run([UNSHARE, "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt "
                            "|| mount -t tmpfs -o size=64k tmpfs /tmp"], capture_output=True,
                           timeout=10, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _full_tmpfs_works(),
                    reason="needs unshare -rm and a tmpfs mount (user namespaces)")
def test_a_real_full_tmpfs(tmp_path: Path) -> None:
    # The real thing: a 1 MiB tmpfs (room for one store of the current schema) filled to the last byte, in a private mount namespace.
    muretai = [sys.executable, "-m", "muretai_cli"]
    mnt = tmp_path / "small"
    mnt.mkdir()
    script = (
        f"mount -t tmpfs -o size=1m tmpfs {mnt} && export MURETAI_HOME={mnt}/home && "
        f"{' '.join(muretai)} id new alice >/dev/null 2>&1 && "
        f"{' '.join(muretai)} op inbox --as alice >/dev/null 2>&1 && "
        f"(head -c 4M /dev/zero > {mnt}/fill; true) 2>/dev/null; "
        f"{' '.join(muretai)} id new bob; echo \"exit=$?\"; "
        f"{' '.join(muretai)} op contact issue --as alice --uses 1; echo \"exit=$?\""
    )
    out = subprocess.run([UNSHARE or "unshare", "-rm", "sh", "-c", script], capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.stdout.count("exit=3") == 2, (out.stdout, out.stderr)
    assert out.stderr.count("error: disk-full: the disk holding ") == 2, out.stderr
    assert "Traceback" not in out.stderr


# --- a key file that cannot be read -------------------------------------------------------

def test_a_key_file_that_cannot_be_read_is_one_line_exit_2(
        monkeypatch: pytest.MonkeyPatch) -> None:
    new_identity("alice")
    key_path = KeyStore(keys_dir()).path_of("alice")
    real_read = Path.read_bytes

    def denied(self: Path) -> bytes:  # chmod 000 does not stop root: say no for it
        if self == key_path:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    for args in (("id", "show", "alice"), ("sign", "message", "--as", "alice", "--to",
                                           SigningKey.generate().did, "hi")):
        result = _cli(*args)
        assert result.exit_code == 2, (args, result.exception, result.stderr)
        assert result.stderr.startswith(
            f"error: unreadable-key-file: cannot read {key_path}: Permission denied"), \
            result.stderr


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="as root, mode 000 does not stop a read")
def test_a_key_file_mode_000_is_unreadable() -> None:
    new_identity("alice")
    path = KeyStore(keys_dir()).path_of("alice")
    path.chmod(0)
    result = run("id", "show", "alice")
    assert result.exit_code == 2 and "unreadable-key-file" in result.stderr


def test_a_directory_where_the_key_file_should_be() -> None:
    root = keys_dir()
    new_identity("alice")
    (root / "bob.key").mkdir()
    result = _cli("id", "show", "bob")
    assert result.exit_code == 2 and "bad-key-file" in result.stderr, result.stderr


# --- a database path that is a directory --------------------------------------------------

@pytest.mark.parametrize("args", [
    ("serve", "--url", "http://127.0.0.1:9"),
    ("op", "inbox"),
    ("op", "contact", "list"),
    ("contact", "grants"),
    ("op", "requests", "list"),
])
def test_a_database_path_that_is_a_directory(tmp_path: Path, args: tuple[str, ...]) -> None:
    new_identity("alice")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    result = _cli(*args, "--as", "alice", "--db", str(folder))
    assert result.exit_code == 2, (result.exception, result.stderr)
    assert result.stderr.splitlines()[0] == \
        f"error: bad-database: {folder} is a directory, not a database file"


def test_the_default_database_path_being_a_directory() -> None:
    did = new_identity("alice")
    db_path(did).mkdir(parents=True)
    result = _cli("op", "inbox", "--as", "alice")
    assert result.exit_code == 2 and "is a directory, not a database file" in result.stderr


# --- a damaged (non-UTF-8) inbox row --------------------------------------------------------

def test_a_row_that_is_not_utf8_is_shown_damaged_and_the_rest_still_reads() -> None:
    did = new_identity("alice")
    key = KeyStore(keys_dir()).load("alice")
    from muretai_cli.door.core import Door, DoorConfig
    from muretai_cli.urls import parse_base_url

    store = IdentityStore(db_path(did))
    door = Door(key.signing_key(), DoorConfig(name="alice", url=parse_base_url(
        "http://127.0.0.1:9"), policy="open", rate_per_sender=0, rate_total=0), store)
    sender = SigningKey.generate()
    for text in ("first", "second"):
        assert door.handle_post(json.dumps(send_request(sender, did, text)).encode())[0] == 200
    raw = sqlite3.connect(db_path(did))
    raw.execute("UPDATE inbox SET text = CAST(X'6f6bff20fe' AS TEXT) WHERE text = 'first'")
    raw.commit()
    raw.close()
    result = _cli("op", "inbox", "--as", "alice")
    assert result.exit_code == 0, (result.exception, result.stderr)
    lines = result.stdout.splitlines()
    damaged = [i for i, line in enumerate(lines) if "DAMAGED (not valid UTF-8 on disk)" in line]
    assert len(damaged) == 1 and lines[damaged[0] + 1] == "  | ok\ufffd \ufffd", lines
    assert "  | second" in lines
    code, doc = _json("op", "inbox", "--as", "alice")
    assert code == 0
    assert [(m["text"], m["damaged"]) for m in doc["messages"]] == [
        ("ok\ufffd \ufffd", True), ("second", False)]
    # and the door goes on accepting into the same store
    assert door.handle_post(json.dumps(send_request(sender, did, "third")).encode())[0] == 200
    assert [m["damaged"] for m in store.inbox()] == [False, False, True]


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    result = _cli(*args, "--json")
    return result.exit_code, json.loads(result.stdout)


def test_a_full_postgresql_disk_is_disk_full_too() -> None:
    psycopg = pytest.importorskip("psycopg")
    from muretai_cli.db._postgres import _unavailable

    exc = _unavailable(psycopg.errors.DiskFull("could not extend file: No space left on device"))
    assert isinstance(exc, DatabaseFull) and exc.code == "disk-full" and exc.exit_code == 3


def test_a_state_file_that_is_a_directory_is_unreadable_not_a_traceback() -> None:
    from muretai_cli.home import home_dir

    (home_dir() / "pins.json").mkdir(parents=True)
    result = _cli("card", "pins")
    assert result.exit_code == 2, (result.exception, result.stderr)
    assert result.stderr.startswith("error: unreadable: ") and "pins.json" in result.stderr
