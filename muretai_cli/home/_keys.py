"""Identities on disk: ``<keys>/<name>.key`` = ``{"seed", "did", "created"}``, mode 600.

After ``muretai id rotate`` the file also holds ``"op": {"seed", "did"}`` (the operational
key that signs messages) and ``"keystate"`` (the root-signed KeyState delegating to it); a
rotation made with the root key kept elsewhere (``--root-file``) leaves no root ``seed``.
"""

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
    from muretai_cli.artifacts.message import Delegated
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

    def message_key(self) -> SigningKey | Delegated:
        """What signs this identity's messages: its op key acting for the root, with the
        KeyState that says so, once ``id rotate`` made one; else the root key itself."""
        from muretai_cli.artifacts.message import Delegated
        from muretai_cli.seam import SigningKey

        data = _read_key_file(self.path)
        op, record = data.get("op"), data.get("keystate")
        if not isinstance(op, dict) or not isinstance(record, dict):
            return _load_signing_key(self.path)
        return Delegated(SigningKey(parse_seed_hex(str(op.get("seed", "")), str(self.path))),
                         self.did, record)

    def keystate(self) -> dict[str, object] | None:
        """The KeyState this identity's messages carry (public), or None before a rotation."""
        record = _read_key_file(self.path, allow_loose=True).get("keystate")
        return record if isinstance(record, dict) else None


def _load_signing_key(path: Path) -> SigningKey:
    from muretai_cli.seam import SigningKey

    data = _read_key_file(path)
    if "seed" not in data and isinstance(data.get("op"), dict):
        raise InputError("root-offline", f"{path} holds only the operational key: the root "
                                         "key was kept elsewhere at the last `id rotate "
                                         "--root-file`", hint="messages are signed by the op "
                                         "key; what needs the root (a door's card, a relay "
                                         "listen, a grant) needs its key file")
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
        created = data.get("created")
        if "seed" not in data and isinstance(data.get("op"), dict):  # the root is offline
            from muretai_cli.seam import public_from_did

            did = data.get("did")
            if not isinstance(did, str):
                raise InputError("bad-key-file", f"{path}: no seed and no did")
            try:
                public_from_did(did)
            except InputError:
                raise
            except Exception:
                raise InputError("bad-key-file", f"{path}: no seed and no valid did") from None
            return Identity(name, did, created if isinstance(created, int) else 0, path)
        key = SigningKey(parse_seed_hex(str(data.get("seed", "")), str(path)))
        if data.get("did") not in (None, key.did):
            raise InputError("bad-key-file", f"{path}: the stored did does not match its seed")
        return Identity(name, key.did, created if isinstance(created, int) else 0, path)

    def rotate(self, name: str, root: SigningKey, *, now: int, root_offline: bool,
               not_after: int | None = None) -> dict[str, object]:
        """A new op key for ``name``, delegated by ``root`` in a KeyState one epoch above the
        last (the previous op key burned); written with the file's other fields, without
        the root seed when ``root_offline``. Returns the new KeyState."""
        from muretai_cli.artifacts.keystate import mint_keystate
        from muretai_cli.seam import SigningKey

        path = self.path_of(name)
        data = _read_key_file(path)
        if data.get("did") not in (None, root.did):
            raise InputError("root-mismatch", f"the root key is {root.did}, but {name} is "
                                              f"{data.get('did')}")
        last = data.get("keystate")
        last = last if isinstance(last, dict) else {}
        previous = last.get("epoch")
        burned = [d for d in last.get("revokedOps") or [] if isinstance(d, str)]
        if isinstance(last.get("opDid"), str):
            burned.append(last["opDid"])
        op = SigningKey.generate()
        record = mint_keystate(root, op_did=op.did, now=now, not_after=not_after,
                               epoch=previous + 1 if isinstance(previous, int) else 1,
                               revoked_ops=burned)
        body = {**data, "did": root.did, "op": {"seed": op.seed.hex(), "did": op.did},
                "keystate": record}
        if root_offline:
            body.pop("seed", None)
        else:
            body["seed"] = root.seed.hex()
        atomic_write(path, (json.dumps(body, indent=2) + "\n").encode(), mode=0o600,
                     overwrite=True)
        return record

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
