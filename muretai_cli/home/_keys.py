"""Identities on disk: ``<keys>/<name>.key`` = ``{"seed", "did", "created"}``, mode 600."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from muretai_cli.errors import InputError
from muretai_cli.home._files import atomic_write, ensure_private_dir, home_dir

if TYPE_CHECKING:
    from muretai_cli.seam import SigningKey

_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_SEED = re.compile(r"[0-9a-fA-F]{64}")
MAX_KEY_FILE = 4096


def valid_name(name: str) -> str:
    """An identity name: ``[A-Za-z0-9._-]{1,64}``, not ``.`` or ``..``; else ``InputError``."""
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise InputError("bad-name", f"{name!r} is not a valid identity name",
                         hint="use 1-64 characters from A-Z a-z 0-9 . _ -")
    return name


def keys_dir(override: str | os.PathLike[str] | None = None,
             env: Mapping[str, str] | None = None) -> Path:
    """``--keys``, else ``$MURETAI_KEYS``, else ``$MURETAI_HOME/keys``."""
    env = os.environ if env is None else env
    if override:
        return Path(override).expanduser()
    if env.get("MURETAI_KEYS"):
        return Path(env["MURETAI_KEYS"]).expanduser()
    return home_dir(env) / "keys"


def parse_seed_hex(text: str, source: str) -> bytes:
    text = text.strip()
    if not _SEED.fullmatch(text):
        raise InputError("bad-seed", f"{source}: a seed is exactly 64 hex characters")
    return bytes.fromhex(text)


@dataclass(frozen=True)
class Identity:
    """A named identity loaded from disk. ``key`` signs; ``did`` is derived from it."""

    name: str
    did: str
    created: int
    path: Path

    def signing_key(self) -> SigningKey:
        """Read the seed again from disk (checked as on load) and return the signing key."""
        return _load_signing_key(self.path)


def _load_signing_key(path: Path) -> SigningKey:
    from muretai_cli.seam import SigningKey

    data = _read_key_file(path)
    return SigningKey(parse_seed_hex(str(data.get("seed", "")), str(path)))


def _read_key_file(path: Path, *, allow_loose: bool = False) -> dict[str, object]:
    try:
        st = path.lstat()
    except FileNotFoundError:
        raise InputError("no-such-identity", f"no identity file at {path}",
                         hint="list identities with `muretai id list`") from None
    except OSError as exc:
        raise InputError("unreadable-key-file", f"{path}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError("bad-key-file", f"{path} is not a regular file")
    folder = path.parent
    with contextlib.suppress(OSError):
        folder_mode = stat.S_IMODE(folder.stat().st_mode)
        if folder_mode & 0o022:  # whoever may write here may swap the key file
            raise InputError("keys-folder-permissions",
                             f"{folder} is writable by group or others (mode "
                             f"{folder_mode:03o}); refusing to use the keys in it",
                             hint=f"chmod go-w {folder}")
    if st.st_mode & 0o077 and not allow_loose:
        raise InputError("key-file-permissions",
                         f"{path} is open to group or others "
                         f"(mode {stat.S_IMODE(st.st_mode):03o}); refusing to use it",
                         hint=f"chmod 600 {path}")
    if st.st_size > MAX_KEY_FILE:
        raise InputError("bad-key-file", f"{path} is too large to be a key file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError("unreadable-key-file", f"cannot read {path}: {exc.strerror}",
                         hint=f"the key file must be readable by you: check its owner and "
                              f"mode (ls -l {path})") from None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InputError("bad-key-file", f"{path} is not a JSON key file") from None
    if not isinstance(data, dict):
        raise InputError("bad-key-file", f"{path} is not a JSON object")
    return data


class KeyStore:
    """The keys folder. Creating never overwrites; loading refuses loose permissions."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path_of(self, name: str) -> Path:
        return self.root / f"{valid_name(name)}.key"

    def create(self, name: str, seed: bytes | None = None, *, now: int | None = None) -> Identity:
        from muretai_cli.seam import SigningKey

        path = self.path_of(name)
        if path.exists():
            raise InputError("exists", f"identity {name!r} already exists at {path}; "
                                       "nothing was overwritten")
        key = SigningKey(seed) if seed is not None else SigningKey.generate()
        created = int(time.time()) if now is None else now
        body = {"seed": key.seed.hex(), "did": key.did, "created": created}
        ensure_private_dir(self.root)
        atomic_write(path, (json.dumps(body, indent=2) + "\n").encode(), mode=0o600)
        return Identity(name, key.did, created, path)

    def load(self, name: str, *, allow_loose: bool = False) -> Identity:
        """The identity ``name``. A key file open to group or others is refused, unless
        ``allow_loose`` (public data only: ``signing_key()`` still refuses it)."""
        from muretai_cli.seam import SigningKey

        path = self.path_of(name)
        data = _read_key_file(path, allow_loose=allow_loose)
        key = SigningKey(parse_seed_hex(str(data.get("seed", "")), str(path)))
        if data.get("did") not in (None, key.did):
            raise InputError("bad-key-file", f"{path}: the stored did does not match its seed")
        created = data.get("created")
        return Identity(name, key.did, created if isinstance(created, int) else 0, path)

    def name_of(self, did: str) -> str | None:
        """The name of the identity here whose DID is ``did`` (None if none is)."""
        for name in self.names():
            try:
                if self.load(name, allow_loose=True).did == did:
                    return name
            except InputError:
                continue  # an unreadable key file names nothing
        return None

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name[:-4] for p in self.root.glob("*.key")
                      if _NAME.fullmatch(p.name[:-4]))

    def remove(self, name: str) -> Path:
        path = self.path_of(name)
        if not path.exists():
            raise InputError("no-such-identity", f"no identity named {name!r} in {self.root}")
        try:
            path.unlink()
        except OSError as exc:
            raise InputError("unwritable", f"cannot remove {path}: {exc.strerror}") from None
        return path
