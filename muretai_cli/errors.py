"""One error hierarchy for the whole library.

    MuretaiError            base; carries a named reason (``code``) and a detail for people
    ├── Refused             a rule was broken or a check failed           (exit 1)
    ├── InputError          input that cannot be read, or a usage mistake (exit 2)
    ├── Unreachable         the network could not reach the peer          (exit 3)
    ├── StorageUnavailable  local storage could not take a write (EIO, a  (exit 3)
    │   │                   file-size limit, a read-only disk); nothing written
    │   └── DiskFull        a write found no space left; nothing written  (exit 3)
    ├── PeerRefused         the peer answered with a refusal              (exit 4)
    ├── DeadlineExceeded    the shared deadline ran out                   (exit 5)
    └── Interrupted         the user stopped the command (Ctrl-C)         (exit 130)

Library code raises these and never prints; the CLI catches ``MuretaiError`` once, renders
``diagnostics()`` and exits with ``exit_code``. This module imports nothing of the project,
so every layer, the seam included, may use it.
"""

from __future__ import annotations

import errno
from typing import Any

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
# A write the storage refused for a reason that is not the file's fault (not its name, mode
# or content): an I/O error, a file-size limit, a read-only or vanished file system.
_STORAGE_FAILED = (errno.EIO, errno.EFBIG, errno.EROFS, errno.ENXIO, errno.ESTALE)


class MuretaiError(Exception):
    """Base of every error muretai raises on purpose."""

    exit_code = 1

    def __init__(self, code: str, detail: str, *, hint: str | None = None,
                 data: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.hint = hint
        self.data = data or {}

    def diagnostics(self) -> str:
        """One or two lines a person can act on: what broke, and what to do."""
        text = f"{self.code}: {self.detail}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def to_json(self) -> dict[str, Any]:
        # "message" is the text; "detail" its old name, kept for one release.
        out: dict[str, Any] = {"ok": False, "error": self.code, "message": self.detail,
                               "detail": self.detail}
        if self.hint:
            out["hint"] = self.hint
        out.update(self.data)
        return out


class Refused(MuretaiError):
    """A rule was broken: a signature, a recipient, a freshness window, a policy."""

    exit_code = 1


class InputError(MuretaiError):
    """Input that cannot be read as what it should be, or a usage mistake."""

    exit_code = 2


class Unreachable(MuretaiError):
    """The peer could not be reached (DNS, connection refused, TLS)."""

    exit_code = 3


class StorageUnavailable(MuretaiError):
    """Local storage could not take a write: nothing was written (or committed). Not the
    file's fault, so never a hint to move it aside: a server answers 503 with Retry-After,
    a command exits 3."""

    exit_code = 3


class DiskFull(StorageUnavailable):
    """A write found the disk (or a quota) full: nothing was written. Not the file's fault,
    so never a hint to move it aside: free space, then retry (exit 3, as for a database that
    cannot take a write)."""

    def __init__(self, where: object) -> None:
        super().__init__("disk-full", f"the disk holding {where} is full; nothing was written",
                         hint="free some space on that disk, then try again")


def is_disk_full(exc: OSError) -> bool:
    """Whether an ``OSError`` says there is no space left (ENOSPC, or a quota: EDQUOT)."""
    return exc.errno in _NO_SPACE


def write_failure(exc: OSError, where: object) -> StorageUnavailable | None:
    """What a failed write means when it is the storage's doing, not the file's: ``DiskFull``
    (ENOSPC, EDQUOT), else ``StorageUnavailable`` for an I/O error, a file-size limit or a
    read-only file system; None for the rest (a name, a mode: the caller names the file)."""
    if is_disk_full(exc):
        return DiskFull(where)
    if exc.errno in _STORAGE_FAILED:
        return storage_unavailable(where, exc.strerror or type(exc).__name__)
    return None


def storage_unavailable(where: object, why: str) -> StorageUnavailable:
    """The one wording of a write the storage refused (files and databases alike)."""
    return StorageUnavailable("storage-unavailable", f"the storage holding {where} could not "
                                                     f"take a write ({why}); nothing was written",
                              hint="check that disk (I/O errors, a file-size limit or quota, a "
                                   "read-only mount), then try again")


class PeerRefused(MuretaiError):
    """The peer answered, and its answer was a refusal (HTTP 429/503/4xx, JSON-RPC error)."""

    exit_code = 4


class DeadlineExceeded(MuretaiError):
    """The deadline shared by a command's requests ran out."""

    exit_code = 5


class Interrupted(MuretaiError):
    """The user stopped the command (Ctrl-C, SIGINT). Raised by no library code: the CLI's
    root turns a ``KeyboardInterrupt`` into this, so it is rendered like any other error."""

    exit_code = 130

    def __init__(self) -> None:
        super().__init__("interrupted", "stopped by Ctrl-C (SIGINT) before it finished",
                         hint="run the command again; what it had committed is kept")
