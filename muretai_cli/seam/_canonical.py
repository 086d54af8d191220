"""Canonical JSON bytes and the parse boundary (seam §1).

``canonical_bytes`` is the one function that turns a value into the bytes that get signed.
``parse_document`` is the one function that turns wire bytes into a value: it refuses what
a repairing reader would silently turn into a different document.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from muretai_cli.errors import InputError, Refused
from muretai_cli.seam._limits import MAX_DEPTH, MAX_SAFE_INT

# MAX_DEPTH is a fixed number, not the interpreter's recursion limit: the same document must
# get the same answer however deep the caller's stack is, and whatever passes must be
# encodable again (canonical_bytes).

# A \uD800-\uDFFF escape (either case). Only documents containing one can smuggle a lone
# surrogate past a strict UTF-8 decode, so the value walk below runs only for those.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

_dumps = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


def canonical_bytes(value: Any) -> bytes:
    """The canonical bytes of ``value``: sorted keys by code point, no whitespace, UTF-8.

    Raises ``Refused('lone-surrogate')`` for a string UTF-8 cannot carry and
    ``Refused('non-finite-number')`` for NaN/Infinity.
    """
    try:
        return _dumps(value).encode("utf-8")
    except UnicodeEncodeError:
        raise Refused("lone-surrogate", "a string holds an unpaired surrogate") from None
    except ValueError as exc:
        raise Refused("non-finite-number", f"not representable as canonical JSON: {exc}") from None
    except TypeError as exc:
        raise Refused("not-json", f"not a JSON value: {exc}") from None
    except RecursionError:
        raise Refused("too-deep", "the value is nested too deeply to encode") from None


def _refuse_constant(name: str) -> Any:
    raise InputError("non-finite-number", f"{name} is not a JSON number")


def _parse_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):  # 1e400 overflows to inf without being "Infinity"
        raise InputError("non-finite-number", f"{text[:40]} overflows to infinity")
    return value


# One decoder for every parse: json.loads with hooks would build a new one per call.
_decode = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_parse_float).decode


def _deeper_than(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            for key, sub in item.items():
                if _LONE_SURROGATE.search(key):
                    return True
                stack.append(sub)
        elif isinstance(item, list):
            stack.extend(item)
    return False


def parse_document(raw: bytes) -> Any:
    """The parse boundary: wire bytes to a JSON value, or ``InputError`` naming why not.

    Refuses a byte order mark, anything but strict UTF-8 (UTF-16/32 and CESU-8 included),
    unpaired surrogates written as escapes (in keys too), NaN/Infinity (and literals that
    overflow to it), nesting deeper than ``MAX_DEPTH``, and integers too long to parse.
    Duplicate keys are last-wins, as in every reference.
    """
    if type(raw) is not bytes:  # the common case skips both steps (one parse per result)
        if not isinstance(raw, bytes | bytearray | memoryview):
            raise InputError("not-bytes", "the parse boundary takes bytes")
        raw = bytes(raw)
    if raw.startswith(b"\xef\xbb\xbf"):
        raise InputError("bom", "the document starts with a byte order mark; send plain UTF-8")
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError("not-utf8", "the document is UTF-16 or UTF-32; only UTF-8 is read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("invalid-utf8", f"not valid UTF-8 at byte {exc.start}") from None
    if "\x00" in text[:4] and raw.strip():
        raise InputError("not-utf8", "the document looks like UTF-16 or UTF-32; only UTF-8")
    try:
        value = _decode(text)
    except InputError:
        raise
    except RecursionError:
        raise InputError("too-deep", "the document is nested too deeply to read") from None
    except ValueError as exc:
        msg = str(exc).splitlines()[0][:120]
        raise InputError("invalid-json", f"not a JSON document: {msg}") from None
    if (isinstance(value, dict | list) and raw.count(b"[") + raw.count(b"{") > MAX_DEPTH
            and _deeper_than(value, MAX_DEPTH)):
        raise InputError("too-deep", f"the document nests more than {MAX_DEPTH} levels deep")
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(value):
        raise InputError("lone-surrogate", "a string or key holds an unpaired surrogate")
    return value


def canonical_from_json(raw: bytes) -> bytes:
    """Wire bytes straight to canonical bytes, through the parse boundary."""
    try:
        return canonical_bytes(parse_document(raw))
    except Refused as exc:  # pragma: no cover - parse_document already refused these
        raise InputError(exc.code, exc.detail) from None


def is_number_hazard(value: object) -> bool:
    """A float whose canonical spelling is Python's own (numberHazards): integral ones
    (``1.0``, ``-0.0``, ``1e+16``) and exponent forms (``1e-07``), which JavaScript writes
    otherwise. Ordinary fractional floats (``0.1``) agree across languages and are not."""
    if not isinstance(value, float):
        return False
    return value.is_integer() or "e" in repr(value)


def _plainly_signable(value: Any) -> bool:
    """The fast walk: True when every node is a str, bool, None, safe int, dict or list."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not -MAX_SAFE_INT <= item <= MAX_SAFE_INT:
                return False
        elif kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        else:
            return False
    return True


def check_signable(value: Any, path: str = "$") -> None:
    """Refuse what a signer must never emit: floats, and integers beyond ±(2**53-1).

    The common case walks the value once without building paths; only a value that fails
    it is walked again to name the offending path.
    """
    if _plainly_signable(value):
        return
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, int):
            if not -MAX_SAFE_INT <= item <= MAX_SAFE_INT:
                raise Refused("int-out-of-range",
                              f"{where} is {item}, outside ±(2**53-1); signed integers must fit")
        elif isinstance(item, float):
            raise Refused("float-in-payload",
                          f"{where} is a float ({item!r}); signed payloads carry integers only")
        elif isinstance(item, dict):
            stack.extend((f"{where}.{k}", v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(item))
        else:
            raise Refused("not-json", f"{where} is a {type(item).__name__}, not a JSON value")
