"""Reading a capture of tool results as a stream, one result at a time.

The input is one of three things, told apart by its first bytes:

* a JSON array (the first non-blank byte is ``[``): streamed element by element; each
  element's text is cut out with the standard decoder and then read through the parse
  boundary, so an array costs about two parses per element. A syntax error ends the array
  (nothing after it can be located); an element the boundary refuses is a finding and the
  rest goes on.
* JSON Lines (the first non-blank line is a JSON value on its own): line by line, memory
  flat; a bad line is a finding for that line.
* one JSON value spread over several lines (pretty-printed): read whole, up to
  ``max_result_bytes``. If it does not parse and some of its lines do, it is read as JSON
  Lines after all.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Literal

from muretai_cli.errors import InputError
from muretai_cli.seam import parse_document

Mode = Literal["jsonl", "array", "single"]
MAX_RESULT_BYTES = 16 * 1024 * 1024
_CHUNK = 1 << 20
_WS = b" \t\r\n"
_WS_TEXT = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder()


@dataclass(slots=True, unsafe_hash=True)  # built per result: not frozen (3x the init)
class RawResult:
    """One result's bytes, or, when they could not be cut out, why not (``problem``)."""

    index: int
    line: int | None
    raw: bytes
    problem: str | None = None


class _Chained(io.RawIOBase):
    """Bytes already read, then the rest of a stream."""

    def __init__(self, head: bytes, tail: BinaryIO) -> None:
        self._head = memoryview(head)
        self._tail = tail

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._tail.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class ResultReader:
    """Iterate ``RawResult``s from a binary stream; ``mode`` is known after the first one."""

    def __init__(self, stream: BinaryIO, *, max_result_bytes: int = MAX_RESULT_BYTES) -> None:
        self._stream = stream
        self._limit = max_result_bytes
        self.mode: Mode = "jsonl"

    def __iter__(self) -> Iterator[RawResult]:
        stream, limit = self._stream, self._limit
        line_no = 0
        while True:
            line = stream.readline(limit + 1)
            if not line:
                return
            line_no += 1
            if not line.isspace():
                break
        if line.lstrip(_WS).startswith(b"["):
            self.mode = "array"
            yield from _array(line, stream, line_no, limit)
            return
        if len(line) > limit and not line.endswith(b"\n"):
            yield _too_long(stream, 0, line_no, limit)
            yield from _jsonl(stream, 1, line_no, limit)
            return
        body = line.rstrip(b"\r\n")
        if _parses(body):
            yield RawResult(0, line_no, body)
            yield from _jsonl(stream, 1, line_no, limit)
            return
        whole = line + stream.read(limit + 1 - len(line))
        if len(whole) > limit:
            yield from _jsonl(io.BufferedReader(_Chained(whole, stream)), 0, line_no - 1, limit)
            return
        if not _parses(whole) and any(_parses(x, objects_only=True) for x in whole.splitlines()):
            yield from _jsonl(io.BytesIO(whole), 0, line_no - 1, limit)
            return
        self.mode = "single"
        yield RawResult(0, line_no, whole)


def _parses(raw: bytes, *, objects_only: bool = False) -> bool:
    try:
        value = parse_document(raw)
    except InputError:
        return False
    return isinstance(value, dict) or not objects_only


def _too_long(stream: BinaryIO, index: int, line_no: int, limit: int) -> RawResult:
    while True:
        more = stream.readline(limit)
        if not more or more.endswith(b"\n"):
            break
    return RawResult(index, line_no, b"", f"too-large: the line is longer than {limit} bytes")


def _jsonl(stream: BinaryIO, index: int, line_no: int, limit: int) -> Iterator[RawResult]:
    readline = stream.readline
    while True:
        line = readline(limit + 1)
        if not line:
            return
        line_no += 1
        if len(line) > limit and not line.endswith(b"\n"):
            yield _too_long(stream, index, line_no, limit)
            index += 1
            continue
        if line.isspace():
            continue
        yield RawResult(index, line_no, line.rstrip(b"\r\n"))
        index += 1


class _Text:
    """A sliding window of decoded text over a byte stream, with line numbers."""

    def __init__(self, head: bytes, stream: BinaryIO, line: int) -> None:
        # surrogateescape keeps invalid bytes round-trippable, so the parse boundary sees them.
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._stream = stream
        self.buf = self._decoder.decode(head)
        self.pos = 0
        self.line = line
        self.eof = False

    def fill(self) -> bool:
        """Read more text; False at the end of the stream."""
        if self.eof:
            return False
        chunk = self._stream.read(_CHUNK)
        if not chunk:
            self.eof = True
        text = self._decoder.decode(chunk, final=self.eof)
        self.buf = self.buf[self.pos:] + text
        self.pos = 0
        return bool(chunk)

    def advance(self, to: int) -> None:
        self.line += self.buf.count("\n", self.pos, to)
        self.pos = to

    def peek(self) -> str:
        """The next non-whitespace character, or '' at the end."""
        while True:
            match = _WS_TEXT.match(self.buf, self.pos)
            self.advance(match.end() if match else self.pos)
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""


def _array(head: bytes, stream: BinaryIO, line_no: int, limit: int) -> Iterator[RawResult]:
    text = _Text(head, stream, line_no)
    text.peek()
    text.advance(text.pos + 1)  # the '['
    index = 0
    if text.peek() == "]":
        text.advance(text.pos + 1)
    else:
        while True:
            start_line = text.line
            end = 0
            problem: str | None = None
            while True:
                try:
                    _, end = _DECODER.raw_decode(text.buf, text.pos)
                    if end < len(text.buf) or text.eof:
                        break  # a number at the very end of the window may go on
                except json.JSONDecodeError as exc:
                    near_end = exc.pos >= len(text.buf) - 8 or exc.msg.startswith("Unterminated")
                    if text.eof or not near_end:
                        problem = f"invalid-json: element {index}: {exc.msg}"
                        break
                except RecursionError:
                    problem = f"too-deep: element {index} is nested too deeply to read"
                    break
                if len(text.buf) - text.pos > limit:
                    problem = f"too-large: element {index} is longer than {limit} bytes"
                    break
                text.fill()
            if problem is not None:
                yield RawResult(index, start_line, b"", problem + "; the rest of the array "
                                "cannot be read")
                return
            raw = text.buf[text.pos:end].encode("utf-8", "surrogateescape")
            text.advance(end)
            yield RawResult(index, start_line, raw)
            index += 1
            after = text.peek()
            if after == ",":
                text.advance(text.pos + 1)
                if text.peek() != "]":
                    continue
                problem = "invalid-json: a trailing comma before ]"
            elif after == "]":
                text.advance(text.pos + 1)
                break
            else:
                problem = "invalid-json: expected ',' or ']' after an element" if after else \
                    "invalid-json: the array is not closed"
            yield RawResult(index, text.line, b"", problem)
            return
    if text.peek():
        yield RawResult(index, text.line, b"", "invalid-json: data after the closing ]")
