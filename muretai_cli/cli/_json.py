"""``--json``: exactly one JSON document whose first key is ``ok`` (or, for a stream, one
JSON line per event), non-ASCII literal except what could steer a terminal.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from muretai_cli.cli._text import INVISIBLE

# Characters that stay literal under ensure_ascii=False but can still steer or fool a
# terminal that shows the JSON: C1 controls (U+009B is a one-byte CSI), DEL and the
# invisible set above. They can only occur inside JSON strings, where a \u escape (a
# surrogate pair past U+FFFF) is the same value.
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{INVISIBLE}]")


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(doc: dict[str, Any], *, line: bool = False) -> str:
    """What ``emit_json`` (or, with ``line``, ``emit_json_line``) prints, newline included:
    ``ok`` first; non-ASCII literal except terminal controls."""
    ordered = {"ok": doc.get("ok", False), **{k: v for k, v in doc.items() if k != "ok"}}
    text = json.dumps(ordered, ensure_ascii=False,
                      **({"separators": (",", ":")} if line else {"indent": 2}))
    return _JSON_UNSAFE.sub(_json_escape, text) + "\n"


class JsonList:
    """A list inside a document for ``emit_json``, kept in a spooled temporary file rather
    than in memory: a command that lists a million results stays flat. Items are written as
    they come, already in the document's layout (a top-level key's list: two levels deep)."""

    def __init__(self) -> None:
        import tempfile

        self._spool = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - write_to closes it
            max_size=1 << 20, mode="w+", encoding="utf-8")
        self.count = 0

    def append(self, item: Any) -> None:
        text = json.dumps(item, ensure_ascii=False, indent=2)
        self._spool.write((",\n" if self.count else "") + "    "
                          + _JSON_UNSAFE.sub(_json_escape, text).replace("\n", "\n    "))
        self.count += 1

    def write_to(self, out: Any) -> None:
        if not self.count:
            out.write("[]")
            return
        out.write("[\n")
        self._spool.seek(0)
        while chunk := self._spool.read(1 << 16):
            out.write(chunk)
        out.write("\n  ]")
        self._spool.close()


def emit_json(doc: dict[str, Any]) -> None:
    """Print one JSON document, ``ok`` first; non-ASCII literal except terminal controls.
    A top-level value may be a ``JsonList`` (written from its spool, in place)."""
    spooled = {k: v for k, v in doc.items() if isinstance(v, JsonList)}
    if not spooled:
        sys.stdout.write(json_text(doc))
        return
    markers = {k: f"\x00{k}\x00" for k in spooled}
    text = json_text({k: markers.get(k, v) for k, v in doc.items()})
    out = sys.stdout
    for key, items in spooled.items():
        before, text = text.split(json.dumps(markers[key]), 1)
        out.write(before)
        items.write_to(out)
    out.write(text)


def emit_json_line(doc: dict[str, Any]) -> None:
    """One line of a JSON Lines stream (``ok`` first), flushed: each event as it happens."""
    sys.stdout.write(json_text(doc, line=True))
    sys.stdout.flush()
