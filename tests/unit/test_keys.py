"""Identities on disk (library level): names, modes, never overwriting, loose permissions."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from muretai_cli.errors import InputError
from muretai_cli.home import KeyStore, atomic_write, ensure_private_dir, keys_dir, valid_name
from muretai_cli.seam import SigningKey

SEED = bytes(range(32))
SEED_DID = "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"  # wire vectors' webBotAuth


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("name", ["a", "A.b_c-1", "x" * 64, "...", "-", "_", "a..b"])
def test_valid_names(name: str) -> None:
    assert valid_name(name) == name


@pytest.mark.parametrize("name", [
    "", ".", "..", "x" * 65, "a/b", "../evil", "a b", "é", "a\n", "a\x00", "a:b", "a*",
    "/abs", "a\\b",
])
def test_invalid_names(name: str, tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        valid_name(name)
    assert info.value.code == "bad-name"
    assert info.value.hint and "A-Z" in info.value.hint
    with pytest.raises(InputError):
        KeyStore(tmp_path / "keys").create(name)
    assert not (tmp_path / "keys").exists()


def test_create_layout_and_modes(tmp_path: Path) -> None:
    root = tmp_path / "keys"
    ident = KeyStore(root).create("alice", SEED, now=1700000000)
    assert ident.did == SEED_DID and ident.created == 1700000000
    assert ident.path == root / "alice.key"
    assert _mode(root) == 0o700
    assert _mode(ident.path) == 0o600
    assert (root / ".gitignore").read_text() == "*\n"
    body = json.loads(ident.path.read_text())
    assert body == {"seed": SEED.hex(), "did": SEED_DID, "created": 1700000000}
    assert sorted(p.name for p in root.iterdir()) == [".gitignore", "alice.key"]  # no temp left


def test_mode_600_even_under_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        ident = KeyStore(tmp_path / "keys").create("alice")
    finally:
        os.umask(old)
    assert _mode(ident.path) == 0o600
    assert _mode(tmp_path / "keys") == 0o700


def test_existing_folder_is_tightened_to_700(tmp_path: Path) -> None:
    root = tmp_path / "keys"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    KeyStore(root).create("alice")
    assert _mode(root) == 0o700


def test_generated_keys_are_random(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    assert store.create("a").did != store.create("b").did


def test_never_overwrites(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    first = store.create("alice", SEED)
    before = first.path.read_bytes()
    with pytest.raises(InputError) as info:
        store.create("alice", bytes(32))
    assert info.value.code == "exists"
    assert first.path.read_bytes() == before
    assert store.load("alice").did == SEED_DID


def test_atomic_write_without_overwrite_refuses_an_existing_file(tmp_path: Path) -> None:
    """The last line of defence (the name appearing between check and write): a hard link
    cannot replace an existing name."""
    path = tmp_path / "x.key"
    path.write_bytes(b"original")
    with pytest.raises(InputError) as info:
        atomic_write(path, b"new")
    assert info.value.code == "exists"
    assert path.read_bytes() == b"original"
    assert os.listdir(tmp_path) == ["x.key"]
    atomic_write(path, b"new", overwrite=True)
    assert path.read_bytes() == b"new"


def test_ensure_private_dir_keeps_an_existing_gitignore(tmp_path: Path) -> None:
    root = tmp_path / "d"
    root.mkdir()
    (root / ".gitignore").write_text("custom\n")
    ensure_private_dir(root)
    assert (root / ".gitignore").read_text() == "custom\n"


def test_ensure_private_dir_takes_a_folder_made_meanwhile(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Two threads of one server (`muretai mcp`: its store watcher and a first tool call) or
    # two processes open a new store at once: both saw no folder, one made it first.
    root = tmp_path / "home" / "doors"
    root.mkdir(parents=True)
    seen = Path.exists
    monkeypatch.setattr(Path, "exists", lambda p: False if p == root else seen(p))
    assert ensure_private_dir(root) == root
    assert (root / ".gitignore").read_text() == "*\n"
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError) as info:  # a file there is still refused
        ensure_private_dir(tmp_path / "file")
    assert info.value.code == "bad-folder"


def test_load_round_trip_and_signing_key(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    store.create("alice", SEED, now=5)
    ident = store.load("alice")
    assert (ident.name, ident.did, ident.created) == ("alice", SEED_DID, 5)
    assert ident.signing_key().public_bytes == SigningKey(SEED).public_bytes
    assert store.names() == ["alice"]


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o601, 0o610])
def test_loose_permissions_refused_naming_the_chmod(tmp_path: Path, mode: int) -> None:
    store = KeyStore(tmp_path / "keys")
    ident = store.create("alice", SEED)
    os.chmod(ident.path, mode)
    with pytest.raises(InputError) as info:
        store.load("alice")
    assert info.value.code == "key-file-permissions"
    assert str(ident.path) in info.value.detail
    assert f"{mode:03o}" in info.value.detail
    assert info.value.hint == f"chmod 600 {ident.path}"
    with pytest.raises(InputError):
        ident.signing_key()  # re-reading the seed checks again
    os.chmod(ident.path, 0o600)
    assert store.load("alice").did == SEED_DID


def test_owner_only_modes_are_fine(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    ident = store.create("alice", SEED)
    os.chmod(ident.path, 0o400)
    assert store.load("alice").did == SEED_DID


@pytest.mark.parametrize(("content", "code"), [
    (b"not json", "bad-key-file"),
    (b"[]", "bad-key-file"),
    (b'{"seed": "00"}', "bad-seed"),
    (b'{"did": "x"}', "bad-seed"),
    (json.dumps({"seed": SEED.hex(), "did": "did:key:zOther"}).encode(), "bad-key-file"),
    (b"x" * 5000, "bad-key-file"),
    (b"\xff\xfe\x00{\x80garbage", "bad-key-file"),  # not UTF-8 at all
    (b"{\"seed\": \"\xff\"}", "bad-key-file"),
])
def test_bad_key_files(tmp_path: Path, content: bytes, code: str) -> None:
    root = ensure_private_dir(tmp_path / "keys")
    path = root / "alice.key"
    path.write_bytes(content)
    os.chmod(path, 0o600)
    with pytest.raises(InputError) as info:
        KeyStore(root).load("alice")
    assert info.value.code == code


def test_symlinked_key_file_refused(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    real = store.create("real", SEED)
    (tmp_path / "keys" / "link.key").symlink_to(real.path)
    with pytest.raises(InputError) as info:
        store.load("link")
    assert info.value.code == "bad-key-file"


def test_missing_identity(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        KeyStore(tmp_path / "keys").load("ghost")
    assert info.value.code == "no-such-identity"
    with pytest.raises(InputError):
        KeyStore(tmp_path / "keys").remove("ghost")


def test_remove(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    ident = store.create("alice")
    assert store.remove("alice") == ident.path
    assert not ident.path.exists()
    assert store.names() == []


def test_names_ignore_other_files(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    store.create("b")
    store.create("a")
    (tmp_path / "keys" / "notes.txt").write_text("x")
    (tmp_path / "keys" / "bad name.key").write_text("x")
    assert store.names() == ["a", "b"]
    assert KeyStore(tmp_path / "nowhere").names() == []


def test_keys_dir_precedence(tmp_path: Path) -> None:
    env = {"MURETAI_HOME": str(tmp_path / "home"), "MURETAI_KEYS": str(tmp_path / "envkeys")}
    assert keys_dir(tmp_path / "flag", env) == tmp_path / "flag"
    assert keys_dir(None, env) == tmp_path / "envkeys"
    assert keys_dir(None, {"MURETAI_HOME": str(tmp_path / "home")}) == tmp_path / "home" / "keys"
    assert keys_dir(None, {}) == Path.home() / ".muretai" / "keys"
    assert keys_dir(None, {"MURETAI_KEYS": ""}) == Path.home() / ".muretai" / "keys"
