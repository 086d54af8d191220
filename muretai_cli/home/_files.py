"""Private folders and atomic file writes."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from muretai_cli.errors import InputError, write_failure


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$MURETAI_HOME``, else ``~/.muretai``."""
    env = os.environ if env is None else env
    value = env.get("MURETAI_HOME")
    return Path(value).expanduser() if value else Path.home() / ".muretai"


def open_to_others(path: Path) -> int | None:
    """The permission bits of ``path`` when its group or others have any access, else None
    (also None when it cannot be stat'ed)."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    return stat.S_IMODE(mode) if mode & 0o077 else None


def ensure_private_dir(path: Path, *, gitignore: bool = True) -> Path:
    """Create ``path`` and any missing parents (each mode 700), with a ``.gitignore`` of ``*``.

    Folders that already exist keep their mode, except ``path`` itself, which is made 700.
    A folder that cannot be created is an ``InputError`` naming it.
    """
    try:
        missing = [p for p in (path, *path.parents) if not p.exists()]
        for folder in reversed(missing):
            with contextlib.suppress(FileExistsError):  # made meanwhile (a thread, a process)
                folder.mkdir(mode=0o700)
        if not path.is_dir():
            raise InputError("bad-folder", f"{path} exists and is not a folder")
        with contextlib.suppress(PermissionError):
            os.chmod(path, 0o700)
        if gitignore:
            marker = path / ".gitignore"
            if not marker.exists():
                atomic_write(marker, b"*\n", mode=0o644, overwrite=True)
    except FileExistsError:
        raise InputError("bad-folder", f"{path} exists and is not a folder") from None
    except OSError as exc:
        failure = write_failure(exc, path)
        if failure is not None:
            raise failure from None
        raise InputError("bad-folder", f"cannot create {path}: {exc.strerror}") from None
    return path


def atomic_write(path: Path, data: bytes, *, mode: int = 0o600, overwrite: bool = False) -> None:
    """Write ``data`` to ``path`` all-or-nothing, with ``mode`` from the first byte.

    Without ``overwrite`` an existing file is never replaced (the final step is a hard link,
    which fails if the name exists); with it, the final step is an atomic rename. A write
    that fails leaves nothing behind: ``DiskFull`` when there is no space,
    ``StorageUnavailable`` when the storage failed it (EIO, a size limit), else an
    ``InputError`` naming the file and why.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if overwrite:
                os.replace(tmp, path)
            else:
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    raise InputError("exists", f"{path} already exists; nothing was "
                                               "overwritten") from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    except OSError as exc:
        failure = write_failure(exc, path)
        if failure is not None:
            raise failure from None
        raise InputError("unwritable", f"cannot write {path}: {exc.strerror}") from None


def read_json_file(path: Path, default: Any) -> Any:
    """A small JSON state file, or ``default`` when it does not exist."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return default
    except OSError as exc:
        raise InputError("unreadable", f"{path}: {exc.strerror}") from None
    from muretai_cli.seam import parse_document

    return parse_document(raw)


def write_json_file(path: Path, value: Any) -> None:
    ensure_private_dir(path.parent)
    data = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).encode() + b"\n"
    atomic_write(path, data, overwrite=True)


class JsonTable:
    """A small state file ``{"v": 1, <section>: {<key>: {record}}}`` under the muretai home.

    ``load()`` reads once and keeps that view for the life of the object (one command's
    view); writers call ``read()`` for a fresh copy, change it, and ``save()`` it atomically.
    Records that are not objects, or lack the string field ``required``, are skipped.
    """

    def __init__(self, path: Path, section: str, *, required: str, what: str,
                 hint: str | None = None) -> None:
        self.path = path
        self._section = section
        self._required = required
        self._what = what
        self._hint = hint
        self._cache: dict[str, dict[str, Any]] | None = None

    def load(self) -> dict[str, dict[str, Any]]:
        if self._cache is None:
            self._cache = self.read()
        return self._cache

    def read(self) -> dict[str, dict[str, Any]]:
        data = read_json_file(self.path, {"v": 1, self._section: {}})
        records = data.get(self._section) if isinstance(data, dict) else None
        if not isinstance(records, dict):
            raise InputError("bad-state", f"{self.path} is not {self._what}", hint=self._hint)
        return {k: v for k, v in records.items()
                if isinstance(v, dict) and isinstance(v.get(self._required), str)}

    def save(self, records: dict[str, dict[str, Any]]) -> None:
        write_json_file(self.path, {"v": 1, self._section: records})
        self._cache = dict(records)
