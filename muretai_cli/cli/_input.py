"""Reading input: a file or ``-`` (stdin), bounded, each failure an ``InputError``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Annotated, BinaryIO

import typer

from muretai_cli.errors import InputError

FilesArg = Annotated[list[str], typer.Argument(
    help="Files to check, or - for JSON Lines on stdin.", show_default=False)]


MAX_INPUT_BYTES = 1024 * 1024


def open_input(name: str) -> BinaryIO:
    """A binary stream for a file, or stdin for ``-``; ``InputError`` naming why not."""
    if name == "-":
        return sys.stdin.buffer
    try:
        return open(name, "rb")
    except FileNotFoundError:
        raise InputError("no-such-file", f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputError("unreadable", f"{name}: is a directory") from None
    except OSError as exc:
        raise InputError("unreadable", f"{name}: {exc.strerror}") from None


def read_input(name: str, *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """Bytes of a file (or ``-`` for stdin), at most ``limit``; ``InputError`` otherwise."""
    stream = open_input(name)
    try:
        data = stream.read(limit + 1)
    except OSError as exc:
        raise InputError("unreadable", f"{name}: {exc.strerror}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if len(data) > limit:
        raise InputError("too-large", f"{name}: larger than {limit} bytes")
    return data


def iter_documents(names: list[str], *, limit: int = MAX_INPUT_BYTES
                   ) -> Iterator[tuple[str, bytes | InputError]]:
    """Each input as ``(label, raw bytes)``; ``-`` yields one item per JSON line on stdin.

    An unreadable input yields its ``InputError`` instead of bytes, so a batch goes on.
    """
    for name in names:
        if name != "-":
            try:
                yield name, read_input(name, limit=limit)
            except InputError as exc:
                yield name, exc
            continue
        for number, line in enumerate(sys.stdin.buffer, start=1):
            if not line.strip():
                continue
            label = f"stdin:{number}"
            if len(line) > limit:
                yield label, InputError("too-large", f"{label}: longer than {limit} bytes")
            else:
                yield label, line.rstrip(b"\r\n")
