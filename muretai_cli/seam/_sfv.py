"""Structured field values (RFC 8941, as RFC 9651 keeps them), the subset Web Bot Auth uses.

sf-strings, keys, integers, parameters, an inner list of strings, and the two dictionaries
RFC 9421 sends (``Signature-Input`` and ``Signature``, each member a label). Anything outside
this profile is refused ``wba-malformed`` with where it broke, never repaired. The signature
rules that read these values are ``_wba``'s. Nothing here does I/O or crypto.
"""

from __future__ import annotations

from typing import Any

from muretai_cli.errors import Refused

_KEY_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz*")
_KEY_REST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.*")
_DIGITS = frozenset("0123456789")
_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


def sf_string(value: str) -> str:
    """An RFC 8941 sf-string: quoted, with only ``\\`` and ``"`` escaped (printable ASCII)."""
    if any(not " " <= ch <= "~" for ch in value):
        raise Refused("not-sf-string", "an sf-string holds printable ASCII only")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class SfParser:
    """A cursor over one header value; each method reads one item or refuses
    ``wba-malformed`` naming the header and the character."""

    def __init__(self, text: str, what: str) -> None:
        self.s = text
        self.i = 0
        self.what = what

    def fail(self, why: str) -> Refused:
        return Refused("wba-malformed", f"{self.what}: {why} at character {self.i}")

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def spaces(self, chars: str = " ") -> None:
        while self.peek() and self.peek() in chars:
            self.i += 1

    def key(self) -> str:
        start = self.i
        if self.peek() not in _KEY_FIRST or not self.peek():
            raise self.fail("expected a lowercase key")
        self.i += 1
        while self.peek() and self.peek() in _KEY_REST:
            self.i += 1
        return self.s[start:self.i]

    def string(self) -> str:
        if self.peek() != '"':
            raise self.fail("expected a quoted string")
        self.i += 1
        out: list[str] = []
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch == "\\":
                nxt = self.s[self.i + 1:self.i + 2]
                if nxt not in ('"', "\\"):
                    raise self.fail("an sf-string escapes only \\ and \"")
                out.append(nxt)
                self.i += 2
            elif ch == '"':
                self.i += 1
                return "".join(out)
            elif " " <= ch <= "~":
                out.append(ch)
                self.i += 1
            else:
                raise self.fail("a control or non-ASCII character in a string")
        raise self.fail("an unterminated string")

    def integer(self) -> int:
        start = self.i
        if self.peek() == "-":
            self.i += 1
        digits = self.i
        while self.peek() and self.peek() in _DIGITS:
            self.i += 1
        if self.i == digits or self.i - digits > 15:
            raise self.fail("expected an integer of 1 to 15 digits")
        return int(self.s[start:self.i])

    def params(self) -> dict[str, str | int | bool]:
        out: dict[str, str | int | bool] = {}
        while self.peek() == ";":
            self.i += 1
            self.spaces()
            name = self.key()
            if name in out:
                raise self.fail(f"parameter {name!r} appears twice")
            if self.peek() == "=":
                self.i += 1
                out[name] = self.string() if self.peek() == '"' else self.integer()
            else:
                out[name] = True
        return out

    def inner_list(self) -> tuple[str, ...]:
        if self.peek() != "(":
            raise self.fail("expected '('")
        self.i += 1
        items: list[str] = []
        while True:
            self.spaces()
            if self.peek() == ")":
                self.i += 1
                return tuple(items)
            items.append(self.string())
            if self.peek() not in (" ", ")"):
                raise self.fail("parameters on a covered component are out of profile")

    def next_member(self) -> bool:
        """After a member: True if another follows (``,``), False at the end."""
        self.spaces(" \t")
        if self.i >= len(self.s):
            return False
        if self.peek() != ",":
            raise self.fail("expected ',' between members")
        self.i += 1
        self.spaces(" \t")
        if self.i >= len(self.s):
            raise self.fail("a trailing comma")
        return True


def signature_input_members(text: str) -> list[tuple[str, tuple[str, ...], dict[str, Any], str]]:
    """Signature-Input's members: (label, covered components, parameters, the exact text of
    the inner list and its parameters, as the signature base must repeat it)."""
    p = SfParser(text, "Signature-Input")
    p.spaces(" \t")
    out = []
    while True:
        label = p.key()
        if p.peek() != "=":
            raise p.fail("expected '=' after the label")
        p.i += 1
        start = p.i
        components = p.inner_list()
        params = p.params()
        out.append((label, components, params, text[start:p.i]))
        if not p.next_member():
            return out


def signature_members(text: str) -> list[tuple[str, str]]:
    """Signature's members: (label, the base64 text between the colons)."""
    p = SfParser(text, "Signature")
    p.spaces(" \t")
    out = []
    while True:
        label = p.key()
        if p.s[p.i:p.i + 2] != "=:":
            raise p.fail("expected '=:' after the label")
        end = p.s.find(":", p.i + 2)
        if end < 0:
            raise p.fail("an unterminated byte sequence")
        value = p.s[p.i + 2:end]
        if not _B64_CHARS.issuperset(value):
            raise p.fail("the signature is not base64")
        p.i = end + 1
        if p.peek() == ";":
            raise p.fail("parameters on a signature are out of profile")
        out.append((label, value))
        if not p.next_member():
            return out
