"""``muretai id new|list|show|rm`` through the real command line (CliRunner)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from muretai_cli.cli import app

SEED_HEX = bytes(range(32)).hex()
SEED_DID = "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=input, env=env)


def _seed_file(tmp_path: Path, text: str = SEED_HEX + "\n") -> str:
    path = tmp_path / "seed.hex"
    path.write_text(text)
    return str(path)


def test_new_prints_the_did_on_stdout_and_the_path_on_stderr(_isolated_env: Path) -> None:
    result = run("id", "new", "alice")
    assert result.exit_code == 0, result.output
    did = result.stdout.strip()
    assert did.startswith("did:key:z6Mk") and "\n" not in did
    assert "created alice" in result.stderr
    path = _isolated_env / "keys" / "alice.key"
    assert str(path) in result.stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert (path.parent / ".gitignore").read_text() == "*\n"
    body = json.loads(path.read_text())
    assert set(body) == {"seed", "did", "created"} and body["did"] == did
    assert isinstance(body["created"], int)


def test_new_json(_isolated_env: Path) -> None:
    result = run("id", "new", "alice", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert next(iter(doc)) == "ok" and doc["ok"] is True
    assert doc["name"] == "alice" and doc["did"].startswith("did:key:z6Mk")


def test_seed_file_import(tmp_path: Path) -> None:
    result = run("id", "new", "alice", "--seed-file", _seed_file(tmp_path))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == SEED_DID


def test_seed_file_uppercase_hex(tmp_path: Path) -> None:
    result = run("id", "new", "alice", "--seed-file", _seed_file(tmp_path, SEED_HEX.upper()))
    assert result.stdout.strip() == SEED_DID


def test_seed_from_stdin() -> None:
    result = run("id", "new", "alice", "--seed-file", "-", input=SEED_HEX + "\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == SEED_DID


@pytest.mark.parametrize("text", [
    SEED_HEX[:-1], SEED_HEX + "0", "zz" + SEED_HEX[2:], "", SEED_HEX[:32] + " " + SEED_HEX[32:],
    "0x" + SEED_HEX[2:],
])
def test_bad_seed_files(tmp_path: Path, _isolated_env: Path, text: str) -> None:
    result = run("id", "new", "alice", "--seed-file", _seed_file(tmp_path, text))
    assert result.exit_code == 2
    assert "bad-seed" in result.stderr and "64 hex" in result.stderr
    assert result.stdout == ""
    assert not (_isolated_env / "keys" / "alice.key").exists()


def test_missing_seed_file(tmp_path: Path) -> None:
    result = run("id", "new", "alice", "--seed-file", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "no-such-file" in result.stderr


def test_oversized_seed_file(tmp_path: Path) -> None:
    result = run("id", "new", "alice", "--seed-file", _seed_file(tmp_path, "0" * 100_000))
    assert result.exit_code == 2
    assert "Traceback" not in result.output


@pytest.mark.parametrize("name", ["a/b", "..", "x" * 65, "a b", "é"])
def test_bad_names_refused(name: str, _isolated_env: Path) -> None:
    result = run("id", "new", name)
    assert result.exit_code == 2
    assert "bad-name" in result.stderr
    assert "hint" in result.stderr
    assert not (_isolated_env / "keys").exists() or not any(
        p.suffix == ".key" for p in (_isolated_env / "keys").iterdir())


def test_never_overwrites(tmp_path: Path, _isolated_env: Path) -> None:
    assert run("id", "new", "alice", "--seed-file", _seed_file(tmp_path)).exit_code == 0
    path = _isolated_env / "keys" / "alice.key"
    before = path.read_bytes()
    result = run("id", "new", "alice")
    assert result.exit_code == 2
    assert "exists" in result.stderr and "nothing was overwritten" in result.stderr
    assert path.read_bytes() == before


def test_loose_key_file_refused_with_the_chmod_fix(_isolated_env: Path) -> None:
    assert run("id", "new", "alice").exit_code == 0
    path = _isolated_env / "keys" / "alice.key"
    did = json.loads(run("id", "show", "alice", "--json").stdout)["did"]
    os.chmod(path, 0o644)
    for args in (["id", "list"], ["sign", "message", "hi", "--as", "alice", "--to", did]):
        result = run(*args)
        assert result.exit_code == 2, args
        assert "key-file-permissions" in result.stderr
        assert str(path) in result.stderr
        assert f"chmod 600 {path}" in result.stderr
        assert "Traceback" not in result.output


def test_id_show_is_public_data_even_with_loose_permissions(_isolated_env: Path) -> None:
    assert run("id", "new", "alice").exit_code == 0
    path = _isolated_env / "keys" / "alice.key"
    did = json.loads(run("id", "show", "alice", "--json").stdout)["did"]
    os.chmod(path, 0o640)
    result = run("id", "show", "alice")
    assert result.exit_code == 0 and did in result.stdout
    assert "warning: key-file-permissions" in result.stderr and "(mode 640)" in result.stderr
    assert f"chmod 600 {path}" in result.stderr
    doc = json.loads(run("id", "show", "alice", "--json").stdout)
    assert doc["ok"] is True and doc["did"] == did
    assert [w["code"] for w in doc["warnings"]] == ["key-file-permissions"]
    os.chmod(path, 0o600)
    assert json.loads(run("id", "show", "alice", "--json").stdout)["warnings"] == []


def test_keys_precedence_flag_over_env_over_home(tmp_path: Path, _isolated_env: Path) -> None:
    flag, envdir = tmp_path / "flag", tmp_path / "envkeys"
    home_keys = _isolated_env / "keys"
    assert run("id", "new", "h").exit_code == 0
    assert (home_keys / "h.key").exists()
    assert run("id", "new", "e", env={"MURETAI_KEYS": str(envdir)}).exit_code == 0
    assert (envdir / "e.key").exists() and not (home_keys / "e.key").exists()
    assert run("id", "new", "f", "--keys", str(flag),
               env={"MURETAI_KEYS": str(envdir)}).exit_code == 0
    assert (flag / "f.key").exists() and not (envdir / "f.key").exists()
    assert stat.S_IMODE(flag.stat().st_mode) == 0o700
    listed = {
        "home": run("id", "list").stdout,
        "env": run("id", "list", env={"MURETAI_KEYS": str(envdir)}).stdout,
        "flag": run("id", "list", "--keys", str(flag),
                    env={"MURETAI_KEYS": str(envdir)}).stdout,
    }
    assert [line.split("\t")[0] for line in listed["home"].splitlines()] == ["h"]
    assert [line.split("\t")[0] for line in listed["env"].splitlines()] == ["e"]
    assert [line.split("\t")[0] for line in listed["flag"].splitlines()] == ["f"]


def test_list(tmp_path: Path) -> None:
    empty = run("id", "list")
    assert empty.exit_code == 0 and empty.stdout == ""
    assert "no identities" in empty.stderr
    run("id", "new", "bob")
    run("id", "new", "alice", "--seed-file", _seed_file(tmp_path))
    result = run("id", "list")
    assert result.stdout.splitlines() == [f"alice\t{SEED_DID}",
                                          result.stdout.splitlines()[1]]
    assert result.stdout.splitlines()[1].startswith("bob\tdid:key:z6Mk")
    doc = json.loads(run("id", "list", "--json").stdout)
    assert next(iter(doc)) == "ok"
    assert [i["name"] for i in doc["identities"]] == ["alice", "bob"]


def test_show(tmp_path: Path) -> None:
    run("id", "new", "alice", "--seed-file", _seed_file(tmp_path))
    result = run("id", "show", "alice")
    assert result.exit_code == 0
    assert SEED_DID in result.stdout
    assert SEED_HEX not in result.output  # the seed is never shown
    assert SEED_DID[len("did:key:"):] in result.stdout  # multibase
    from muretai_cli.seam import SigningKey

    public_hex = SigningKey(bytes(range(32))).public_bytes.hex()
    assert public_hex in result.stdout
    assert "verificationMethod" not in result.stdout


def test_show_doc(tmp_path: Path) -> None:
    run("id", "new", "alice", "--seed-file", _seed_file(tmp_path))
    text = run("id", "show", "alice", "--doc")
    assert text.exit_code == 0
    assert '"verificationMethod"' in text.stdout and '"keyAgreement"' in text.stdout
    doc = json.loads(run("id", "show", "alice", "--doc", "--json").stdout)
    assert next(iter(doc)) == "ok"
    assert "seed" not in json.dumps(doc)
    document = doc["didDocument"]
    assert document["id"] == SEED_DID
    assert document["verificationMethod"][0] == {
        "id": f"{SEED_DID}#{SEED_DID[8:]}", "type": "Multikey", "controller": SEED_DID,
        "publicKeyMultibase": SEED_DID[8:]}
    assert document["keyAgreement"][0].startswith(f"{SEED_DID}#z6LS")
    plain = json.loads(run("id", "show", "alice", "--json").stdout)
    assert "didDocument" not in plain and plain["did"] == SEED_DID


def test_show_missing() -> None:
    result = run("id", "show", "ghost")
    assert result.exit_code == 2
    assert "no-such-identity" in result.stderr
    doc = json.loads(run("id", "show", "ghost", "--json").stdout)
    assert next(iter(doc)) == "ok" and doc["ok"] is False and doc["error"] == "no-such-identity"


def test_rm_asks_and_no_keeps_the_key(_isolated_env: Path) -> None:
    run("id", "new", "alice")
    path = _isolated_env / "keys" / "alice.key"
    result = run("id", "rm", "alice", input="n\n")
    assert result.exit_code == 1
    assert "Remove alice" in result.stderr and "nothing removed" in result.stderr
    assert path.exists()
    result = run("id", "rm", "alice", input="\n")  # the default is no
    assert result.exit_code == 1 and path.exists()


def test_rm_confirmed(_isolated_env: Path) -> None:
    run("id", "new", "alice")
    path = _isolated_env / "keys" / "alice.key"
    result = run("id", "rm", "alice", input="y\n")
    assert result.exit_code == 0, result.output
    assert not path.exists()
    assert "removed alice" in result.stderr


def test_rm_yes_does_not_ask(_isolated_env: Path) -> None:
    run("id", "new", "alice")
    run("id", "new", "bob")
    result = run("id", "rm", "alice", "--yes")
    assert result.exit_code == 0
    assert "Remove" not in result.output
    assert not (_isolated_env / "keys" / "alice.key").exists()
    doc = json.loads(run("id", "rm", "bob", "-y", "--json").stdout)
    assert doc["ok"] is True and doc["removed"] == "bob"


def test_rm_missing_and_bad_name() -> None:
    assert run("id", "rm", "ghost", "--yes").exit_code == 2
    result = run("id", "rm", "../etc/passwd", "--yes")
    assert result.exit_code == 2 and "bad-name" in result.stderr


def test_rm_keeps_stdout_for_the_result(_isolated_env: Path) -> None:
    run("id", "new", "alice")
    result = run("id", "rm", "alice", input="n\n")
    assert result.stdout == "", "the question and its answer stay off stdout"
    result = run("id", "rm", "alice", "--json", input="n\n")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1
    assert doc["ok"] is False and doc["error"] == "not-confirmed"
    result = run("id", "rm", "alice", "--json", input="y\n")
    assert json.loads(result.stdout)["ok"] is True


def test_list_goes_on_past_a_bad_key_file(_isolated_env: Path) -> None:
    run("id", "new", "alice")
    run("id", "new", "bob")
    (_isolated_env / "keys" / "bob.key").chmod(0o644)
    result = run("id", "list")
    assert result.exit_code == 2, "a key file that cannot be used is still an error"
    assert result.stdout.startswith("alice\t")
    assert "bob" in result.stderr and "chmod 600" in result.stderr
    doc = json.loads(run("id", "list", "--json").stdout)
    assert [i["name"] for i in doc["identities"]] == ["alice"]
    assert doc["problems"][0]["name"] == "bob"


def test_keys_folder_that_cannot_be_made_is_a_clean_error(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    result = run("id", "new", "x", "--keys", str(blocker))
    assert result.exit_code == 2 and "bad-folder" in result.stderr
    result = run("id", "new", "x", "--keys", str(blocker / "sub"))
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert run("id", "list", "--keys", str(blocker)).exit_code == 2


def test_home_and_keys_folders_are_private(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "fresh" / "home"
    monkeypatch.setenv("MURETAI_HOME", str(home))
    assert run("id", "new", "alice").exit_code == 0
    for folder in (home, home / "keys", home.parent):
        assert folder.stat().st_mode & 0o777 == 0o700, folder


def test_keys_folder_writable_by_others_is_refused_with_the_chmod_fix(
        _isolated_env: Path) -> None:
    assert run("id", "new", "alice").exit_code == 0
    folder = _isolated_env / "keys"
    did = json.loads(run("id", "show", "alice", "--json").stdout)["did"]
    for mode in (0o777, 0o720, 0o702):
        os.chmod(folder, mode)
        result = run("sign", "message", "hi", "--as", "alice", "--to", did)
        assert result.exit_code == 2, (oct(mode), result.output)
        assert "keys-folder-permissions" in result.stderr and str(folder) in result.stderr
        assert f"chmod go-w {folder}" in result.stderr
    os.chmod(folder, 0o755)  # readable by others is fine: the key files themselves are 600
    assert run("sign", "message", "hi", "--as", "alice", "--to", did).exit_code == 0
