"""Keys a person can back up, move and check (issue 22, item 16):
`id export` / `id import` (a passphrase-sealed, versioned file; weak KDF parameters refused;
nothing overwritten), `id show`'s fingerprint (its derivation re-done here from
docs/identities.md), and `op contact verify` marking a peer checked out of band, as every
view of peers shows (connections, inbox, requests against a live door). The passphrase on a
terminal is a real process on a pty; the rest run in-process (``in_process``)
against a real ``serve`` process."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import stat
from pathlib import Path
from typing import Any

import base58
import pytest

from tests.cli_helpers import in_process, new_identity
from tests.servers import running, start_serve

PASS = "correct horse battery staple"


@pytest.fixture
def passfile(tmp_path: Path) -> Path:
    path = tmp_path / "pass.txt"
    path.write_text(PASS + "\n")
    return path


def _export(tmp_path: Path, passfile: Path, name: str = "alice") -> Path:
    out = tmp_path / f"{name}.export.json"
    done = in_process("id", "export", name, "--to", str(out), "--passphrase-file", str(passfile))
    assert done.returncode == 0, done.stderr
    return out


def test_export_then_import_elsewhere_is_the_same_identity(tmp_path: Path,
                                                          passfile: Path) -> None:
    did = new_identity("alice")
    out = _export(tmp_path, passfile)
    assert oct(stat.S_IMODE(out.stat().st_mode)) == "0o600"
    doc = json.loads(out.read_text())
    assert doc["typ"] == "muretai-identity-export" and doc["v"] == 1
    assert doc["kdf"]["name"] == "scrypt" and doc["kdf"]["n"] >= 2**15
    seed = json.loads(next((Path(os.environ["MURETAI_HOME"]) / "keys").glob("alice.key"))
                      .read_text())["seed"]
    assert seed not in out.read_text() and did not in out.read_text(), "sealed, all of it"
    again = in_process("id", "export", "alice", "--to", str(out), "--passphrase-file",
                    str(passfile))
    assert again.returncode == 2 and out.read_text() == json.dumps(doc, indent=2) + "\n"
    elsewhere = {"MURETAI_HOME": str(tmp_path / "other-home")}
    got = in_process("id", "import", str(out), "--passphrase-file", str(passfile), env=elsewhere)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == did
    shown = json.loads(in_process("id", "show", "alice", "--json", env=elsewhere).stdout)
    assert shown["did"] == did
    # never over an existing identity: the same name, or the same DID under another name
    for extra in ([], ["--as", "alice-copy"]):
        dup = in_process("id", "import", str(out), "--passphrase-file", str(passfile), *extra,
                      env=elsewhere)
        assert dup.returncode == 2 and "exists" in dup.stderr, dup.stderr
    moved = in_process("id", "import", str(out), "--passphrase-file", str(passfile), "--as",
                    "alice2", env={"MURETAI_HOME": str(tmp_path / "third-home")})
    assert moved.returncode == 0 and moved.stdout.strip() == did


def _tampered(out: Path, change: dict[str, Any], tmp_path: Path) -> Path:
    doc = json.loads(out.read_text())
    for key, value in change.items():
        if key.startswith("kdf."):
            doc["kdf"][key[4:]] = value
        else:
            doc[key] = value
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("change", "code", "exit_code"), [
    ({}, "wrong-passphrase", 1),                          # the wrong passphrase
    ({"kdf.n": 2**16}, "wrong-passphrase", 1),            # a changed parameter: no open
    ({"kdf.n": 2**14}, "weak-kdf", 2),                    # refused before any work
    ({"kdf.r": 1}, "weak-kdf", 2),
    ({"kdf.n": 2**30}, "bad-export", 2),                  # or that would stall the machine
    ({"v": 2}, "bad-export", 2),
    ({"typ": "something-else"}, "bad-export", 2),
    ({"cipher": "aes-256-gcm"}, "bad-export", 2),
])
def test_an_export_that_does_not_open_imports_nothing(change: dict[str, Any], code: str,
                                                      exit_code: int, tmp_path: Path,
                                                      passfile: Path) -> None:
    new_identity("alice")
    out = _export(tmp_path, passfile)
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("not the passphrase\n")
    use = wrong if not change else passfile
    elsewhere = {"MURETAI_HOME": str(tmp_path / "other-home")}
    got = in_process("id", "import", str(_tampered(out, change, tmp_path)), "--passphrase-file",
                  str(use), env=elsewhere)
    assert got.returncode == exit_code and code in got.stderr, got.stderr
    assert not (tmp_path / "other-home" / "keys").exists() or \
        not list((tmp_path / "other-home" / "keys").glob("*.key"))


def test_the_passphrase_never_comes_from_argv(tmp_path: Path) -> None:
    new_identity("alice")
    helped = in_process("id", "export", "--help").stdout
    assert "--passphrase-file" in helped and "--passphrase " not in helped
    asked = in_process("id", "export", "alice", "--to", str(tmp_path / "x.json"), input="")
    assert asked.returncode == 2 and "no-passphrase" in asked.stderr
    assert not (tmp_path / "x.json").exists()


def _fingerprint_by_the_doc(did: str) -> str:
    """docs/identities.md: base32 of the first 10 bytes of SHA-256("muretai fingerprint
    v1" NUL || the multicodec-prefixed public key), in groups of four."""
    raw = base58.b58decode(did[len("did:key:z"):])
    text = base64.b32encode(hashlib.sha256(b"muretai fingerprint v1\x00" + raw)
                            .digest()[:10]).decode()
    return "-".join(text[i:i + 4] for i in range(0, 16, 4))


def test_id_show_prints_the_documented_fingerprint() -> None:
    did = new_identity("alice")
    shown = json.loads(in_process("id", "show", "alice", "--json").stdout)
    assert shown["fingerprint"] == _fingerprint_by_the_doc(did)
    assert len(shown["fingerprint"]) == 19
    text = in_process("id", "show", "alice").stdout
    assert f"fingerprint {shown['fingerprint']}" in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_a_checked_peer_is_marked_in_every_view(tmp_path: Path) -> None:
    alice, bob = new_identity("alice"), new_identity("bob")
    print_of = {d: json.loads(in_process("id", "show", n, "--json").stdout)["fingerprint"]
                for n, d in (("alice", alice), ("bob", bob))}
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with running(start_serve(tmp_path, "bob", "--url", url, "--port", str(port))):
        held = in_process("op", "--as", "alice", "dm", bob, "hello bob", "--card-url", url)
        assert held.returncode == 0 and held.stdout.startswith("held"), held.stderr
        listed = json.loads(in_process("op", "--as", "bob", "requests", "list", "--json").stdout)
        assert [r["checkedOutOfBand"] for r in listed["requests"]] == [False]
        wrong = in_process("op", "--as", "bob", "contact", "verify", alice, print_of[bob])
        assert wrong.returncode == 1 and "fingerprint-mismatch" in wrong.stderr
        assert print_of[alice] not in wrong.stderr, "a refusal never tells the right one"
        listed = json.loads(in_process("op", "--as", "bob", "requests", "list", "--json").stdout)
        assert [r["checkedOutOfBand"] for r in listed["requests"]] == [False]
        spoken = print_of[alice].lower().replace("-", " ")   # as a person types what is read
        ok = in_process("op", "--as", "bob", "contact", "verify", alice, spoken)
        assert ok.returncode == 0, ok.stderr
        listed = json.loads(in_process("op", "--as", "bob", "requests", "list", "--json").stdout)
        assert [r["checkedOutOfBand"] for r in listed["requests"]] == [True]
        assert "(checked out of band)" in in_process("op", "--as", "bob", "requests").stdout
        rid = listed["requests"][0]["requestId"]
        assert in_process("op", "--as", "bob", "requests", "approve", rid).returncode == 0
        inbox = json.loads(in_process("op", "--as", "bob", "inbox", "--json").stdout)["messages"]
        assert [(m["from"], m["checkedOutOfBand"]) for m in inbox] == [(alice, True)]
        assert "(checked out of band)" in in_process("op", "--as", "bob", "inbox").stdout
        conns = json.loads(in_process("op", "--as", "bob", "connections", "--json").stdout)
        assert {c["did"]: c["checkedOutOfBand"] for c in conns["connections"]} == {alice: True}
        # the mark is bob's alone: alice's own views do not carry it
        mine = json.loads(in_process("op", "--as", "alice", "connections", "--json").stdout)
        assert all(c["checkedOutOfBand"] is False for c in mine["connections"])
    assert (Path(os.environ["MURETAI_HOME"]) / "verified").is_dir()


def _on_a_terminal(argv: list[str], answers: list[str]) -> tuple[int, str]:
    """``muretai ARGV`` with a pseudo-terminal as its controlling terminal (as a person at a
    shell): each prompt ending in ': ' is answered with the next of ``answers``."""
    import pty
    import select
    import signal
    import sys
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: its stdin, stdout, stderr and /dev/tty are the terminal
        os.execvpe(sys.executable, [sys.executable, "-m", "muretai_cli", *argv],
                   dict(os.environ))
    seen, since, pending = b"", b"", list(answers)
    deadline = time.monotonic() + 60
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:  # a read must not hang
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
            raise AssertionError(f"no answer from {argv} in 60 s; it showed: {seen!r}")
        try:
            chunk = os.read(fd, 1024)
        except OSError:  # the child closed the terminal: it has ended
            break
        if not chunk:
            break
        seen += chunk
        since += chunk
        # answer a prompt shown since the last answer (the old one must not count twice:
        # typed before the next prompt turns echo off, an answer is echoed, then flushed)
        if pending and since.rstrip(b" ").endswith(b":"):
            os.write(fd, pending.pop(0).encode() + b"\n")
            since = b""
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), seen.decode(errors="replace")


def test_the_passphrase_is_asked_on_the_terminal_and_not_echoed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    did = new_identity("alice")
    out = tmp_path / "alice.export.json"
    code, shown = _on_a_terminal(["id", "export", "alice", "--to", str(out)], [PASS, PASS])
    assert code == 0, shown
    assert "passphrase:" in shown and PASS not in shown, "typed, never echoed"
    code, shown = _on_a_terminal(["id", "import", str(out), "--as", "alice2"], [PASS])
    assert code == 2 and "exists" in shown, shown       # the same DID is here already
    elsewhere = tmp_path / "other-home"
    monkeypatch.setenv("MURETAI_HOME", str(elsewhere))
    code, shown = _on_a_terminal(["id", "import", str(out)], [PASS])
    assert code == 0 and did in shown, shown
    mismatch = tmp_path / "m.json"
    code, shown = _on_a_terminal(["id", "export", "alice", "--to", str(mismatch)],
                                 [PASS, PASS + "x"])
    assert code == 2 and "passphrase-mismatch" in shown and not mismatch.exists(), shown
