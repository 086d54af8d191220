"""``serve --on-message CMD``: a program of the owner's answers each delivered message.

The door runs CMD (split like a shell line, but never through a shell, and nothing of the
peer's on its command line) once per message consent delivered to the inbox, with the
verified message as one JSON object on stdin. What CMD prints on stdout becomes the text of
the door's signed reply. That text is only ever text: bounded in size, decoded as UTF-8,
control characters shown as ``?``. Held, refused and repeated messages never reach CMD.

CMD runs off the event loop (an asyncio subprocess, in its own process group) under one
deadline that covers waiting for a free slot, writing stdin, reading stdout and exiting. A
CMD that fails (cannot start, exits non-zero, runs past the deadline, prints more than the
cap, prints what is not UTF-8) changes nothing for the visitor but the text: the door's
fixed receipt is the reply, and the failure is a warning with a code (see ``FAILURES``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
from dataclasses import dataclass
from typing import Any

from muretai_cli.errors import InputError
from muretai_cli.seam import MAX_TEXT

TIMEOUT = 5.0  # seconds: well inside a visitor's knock deadline (30 s)
MAX_OUTPUT = MAX_TEXT  # bytes of stdout: a reply is bounded as the door bounds what it takes
REAP_SECONDS = 1.0  # after a kill, how long the door waits to see CMD gone
RUNNING = 4  # CMDs at once per door process; others wait for a slot, inside their deadline
# Each failure's code, and what it means.
FAILURES = {
    "cannot-run": "the program could not be started (or given the message)",
    "exit-status": "the program exited with a status other than 0",
    "timeout": "the program did not finish within the deadline",
    "too-large": "the program printed more than the cap",
    "not-text": "the program printed bytes that are not UTF-8",
}
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline


@dataclass(frozen=True)
class Outcome:
    """What CMD made of one message: reply ``text`` (None: the receipt stays), or a
    failure ``code`` (one of ``FAILURES``) and a ``message`` for the owner's log."""

    text: str | None = None
    code: str | None = None
    message: str = ""


class _TooLarge(Exception):
    pass


def as_text(output: bytes) -> str:
    """CMD's stdout as reply text: UTF-8, CRLF as LF, control characters (but tab and
    newline) as ``?``, surrounding white space dropped. ``UnicodeDecodeError`` if not UTF-8."""
    text = output.decode("utf-8").replace("\r\n", "\n")
    return _CONTROLS.sub("?", text).strip()


class OnMessage:
    """One door's ``--on-message`` program: ``command`` is the owner's CMD line."""

    def __init__(self, command: str, *, timeout: float = TIMEOUT, max_output: int = MAX_OUTPUT,
                 running: int = RUNNING, option: str = "--on-message") -> None:
        # ``option``: the flag that named CMD, for the refusals (turn-check's is --exec)
        code = f"bad-{option.lstrip('-')}"
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise InputError(code, f"{option} {command[:80]!r}: {exc}") from None
        if not argv:
            raise InputError(code, f"{option} needs a command")
        if shutil.which(argv[0]) is None:
            raise InputError(code, f"{option}: {argv[0][:80]!r} is not a program this "
                                   "process can run",
                             hint="give a path to an executable, or a command on $PATH")
        if not timeout > 0:
            raise InputError(code, f"{option}-timeout {timeout!r} must be more than 0")
        self.argv = argv
        self.timeout = timeout
        self.max_output = max_output
        self.running = running
        self._slots: asyncio.Semaphore | None = None  # made on the serving loop

    async def answer(self, message: dict[str, Any]) -> Outcome:
        """Run CMD on ``message`` (a JSON-ready dict); never raises."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.running)
        try:
            stdin = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
            return await asyncio.wait_for(self._run(self._slots, stdin), self.timeout)
        except TimeoutError:
            return Outcome(code="timeout", message=f"ran past {self.timeout:g} s")
        except Exception as exc:  # whatever went wrong here, the receipt stands
            return Outcome(code="cannot-run", message=f"{type(exc).__name__}: {exc}"[:200])

    async def _run(self, slots: asyncio.Semaphore, stdin: bytes) -> Outcome:
        async with slots:
            try:
                proc = await asyncio.create_subprocess_exec(
                    *self.argv, stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE, start_new_session=True)
            except OSError as exc:
                return Outcome(code="cannot-run", message=f"{self.argv[0]}: {exc.strerror}")
            ended = False  # CMD closed its stdout and exited: nothing of it is left
            try:
                outcome = await self._talk(proc, stdin)
                ended = True
                return outcome
            except _TooLarge:
                return Outcome(code="too-large", message=f"printed more than "
                                                         f"{self.max_output} bytes")
            finally:
                if not ended:  # too loud, or late (cancelled): its whole group goes
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                # Reaped, unless something that left the group still holds its stdout.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(proc.wait()), REAP_SECONDS)

    async def _talk(self, proc: asyncio.subprocess.Process, stdin: bytes) -> Outcome:
        writer = asyncio.ensure_future(_feed(proc, stdin))
        try:
            output = await self._read(proc)
        finally:
            writer.cancel()
        status = await proc.wait()
        if status != 0:
            return Outcome(code="exit-status", message=f"exited with status {status}")
        try:
            text = as_text(output)
        except UnicodeDecodeError:
            return Outcome(code="not-text", message="printed bytes that are not UTF-8")
        return Outcome(text=text or None)

    async def _read(self, proc: asyncio.subprocess.Process) -> bytes:
        output = bytearray()
        while proc.stdout is not None and (chunk := await proc.stdout.read(65536)):
            output += chunk
            if len(output) > self.max_output:
                raise _TooLarge
        return bytes(output)


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """Write the message to CMD's stdin and close it; a CMD that does not read is fine."""
    if proc.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(data)
        await proc.stdin.drain()
        proc.stdin.close()
        await proc.stdin.wait_closed()
