"""Rendering: stdout carries only the result, diagnostics go to stderr.

``--json`` prints exactly one JSON document whose first key is ``ok``. Text that came from
a peer passes through ``safe()`` before it reaches a terminal.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer

from muretai_cli.errors import InputError, MuretaiError

if TYPE_CHECKING:
    from muretai_cli.home import Identity
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.verdict import Verdict

# Eager, so a callback of another option (a DID resolved as it is parsed) knows the format.
JsonOpt = Annotated[bool, typer.Option("--json", is_eager=True,
                                       help="Print one JSON document (first key: ok).")]
KeysOpt = Annotated[Path | None, typer.Option(
    "--keys", envvar="MURETAI_KEYS", help="Keys folder (default $MURETAI_HOME/keys).",
    show_default=False)]
FilesArg = Annotated[list[str], typer.Argument(
    help="Files to check, or - for JSON Lines on stdin.", show_default=False)]
NowOpt = Annotated[int | None, typer.Option(
    "--now", help="Judge at this epoch second instead of the clock.", show_default=False)]
AS_ENV = "MURETAI_AS"
AsOpt = Annotated[str | None, typer.Option(
    "--as", metavar="NAME|DID", show_default=False,
    help=f"The identity to act as: a name in keys/, or its DID; default ${AS_ENV}.")]
MAX_INPUT_BYTES = 1024 * 1024


def chosen_identity(as_: str | None) -> str | None:
    """The identity named by ``--as``, else by ``$MURETAI_AS``, else None."""
    return as_ or os.environ.get(AS_ENV) or None


def identity_name(as_: str | None) -> str:
    """The identity named by ``--as``, else by ``$MURETAI_AS``; a usage error if neither."""
    name = chosen_identity(as_)
    if not name:
        raise InputError("no-identity", f"which identity? give --as NAME or set {AS_ENV}=NAME",
                         hint="`muretai id list` shows your identities")
    return name


def load_identity(as_: str | None, keys: Path | None) -> Identity:
    """The identity ``--as`` (or ``$MURETAI_AS``) names, loaded with its permissions checked."""
    return own_identity(identity_name(as_), keys)


def own_identity(value: str, keys: Path | None, *, option: str = "--as") -> Identity:
    """One of your identities, named or given by its DID, loaded with its permissions
    checked; a DID none of them has is a usage error naming ``option``."""
    from muretai_cli.home import KeyStore, keys_dir

    store = KeyStore(keys_dir(keys))
    if value.startswith("did:"):
        name = store.name_of(value)
        if name is None:
            raise InputError("no-such-identity", f"{option} {safe(value, limit=120)}: none of "
                                                 f"your identities (in {store.root}) has this DID",
                             hint="`muretai id list` shows your identities")
        value = name
    return store.load(value)

# What peer text may not bring to a terminal, each shown as '?':
# - C0/C1 controls (but tab/newline where allowed) and DEL;
# - bidi marks, embeddings, overrides and isolates (U+061C, U+200E/F, U+202A-E, U+2066-9),
#   which can make a terminal show text in another order than it is;
# - line and paragraph separators (U+2028/9), which break a "single line";
# - invisible characters that can hide text from a person but not from a model: zero width
#   space, word joiner and invisible operators, deprecated format controls, BOM, interlinear
#   annotation, soft hyphen, Hangul fillers, Mongolian vowel separator, tag characters
#   (U+E0000-E007F) and the variation selectors supplement (U+E0100-E01EF).
# ZWNJ/ZWJ (U+200C/D) and U+FE00-FE0F stay: scripts and emoji need them, and alone they hide
# nothing.
_INVISIBLE = ("\u00ad\u061c\u115f\u1160\u180e\u200b\u200e\u200f\u2028\u2029"
              "\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
              "\U000e0000-\U000e007f\U000e0100-\U000e01ef")
_UNSAFE_LINE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_INVISIBLE}]")
_UNSAFE_BLOCK = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")


def when(epoch: object) -> str:
    """A time for people, in one form with its zone: ``2026-11-30 19:54:13 UTC``.

    ``-`` for none (None, 0, ""), ``?`` for what is not an epoch second.
    """
    import time

    if epoch in (None, 0, ""):
        return "-"
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        return "?"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))
    except (OverflowError, OSError, ValueError):
        return "?"


def safe(text: object, *, multiline: bool = False, limit: int | None = 2000) -> str:
    """Untrusted text made inert for a terminal: controls, bidi marks, line separators and
    invisible characters (``_INVISIBLE``) become '?'."""
    value = text if isinstance(text, str) else str(text)
    if limit is not None and len(value) > limit:
        value = value[:limit] + "…"
    return (_UNSAFE_BLOCK if multiline else _UNSAFE_LINE).sub("?", value)


# Characters that stay literal under ensure_ascii=False but can still steer or fool a
# terminal that shows the JSON: C1 controls (U+009B is a one-byte CSI), DEL and the
# invisible set above. They can only occur inside JSON strings, where a \u escape (a
# surrogate pair past U+FFFF) is the same value.
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{_INVISIBLE}]")


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


def say(text: str = "") -> None:
    """A line of result on stdout."""
    sys.stdout.write(text + "\n")


def note(text: str) -> None:
    """A diagnostic on stderr."""
    sys.stderr.write(text + "\n")


def fail(exc: MuretaiError, json_out: bool) -> typer.Exit:
    """Render an error and return the ``typer.Exit`` to raise."""
    if json_out:
        emit_json(exc.to_json())
    else:
        note(f"error: {safe(exc.diagnostics(), multiline=True)}")
    return typer.Exit(exc.exit_code)


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


def result_of(label: str, reasons: list[dict[str, str]], exit_code: int,
              **facts: Any) -> dict[str, Any]:
    """One batch item. ``reasons`` are ``Reason.to_json()`` dicts; ``exit_code`` 0, 1 or 2."""
    return {"input": label, "ok": exit_code == 0, "reasons": reasons, **facts, "_exit": exit_code}


def error_result(label: str, exc: MuretaiError, **facts: Any) -> dict[str, Any]:
    reason = {"code": exc.code, "message": exc.detail, "severity": "error", "detail": exc.detail}
    return result_of(label, [reason], exc.exit_code, **facts)


def render_batch(results: Iterable[dict[str, Any]], json_out: bool,
                 summary: Callable[[dict[str, Any]], str] | None = None, *,
                 fmt: str = "text", suite: str = "muretai") -> int:
    """Print a batch as its items come and return its exit code: the worst (2 > 1 > 0).

    Memory stays flat however many items: text is printed item by item; ``--json`` spools
    the items in a ``JsonList`` (``ok`` comes first and is known only at the end), so the
    document is the one ``emit_json`` always wrote; CI formats keep one small row per item.
    No item at all is a usage error (``no-input``), said before anything is printed.
    """
    ci = fmt in ("junit", "github") and not json_out
    exit_code = 0
    count = 0
    cases: list[Any] = []
    listed = JsonList() if json_out else None
    for item in results:
        code = int(item.pop("_exit", 0))
        exit_code = max(exit_code, code)
        count += 1
        if ci:
            from muretai_cli.cli._formats import batch_cases

            cases += batch_cases([item], [code], suite=suite)
        elif listed is not None:
            listed.append(item)
        else:
            _print_item(item, summary)
    if not count:
        raise InputError("no-input", "no inputs were given (stdin was empty)")
    if ci:
        from muretai_cli.cli._formats import emit_ci

        emit_ci(cases, fmt, name=suite)
    elif listed is not None:
        emit_json({"ok": exit_code == 0, "results": listed})
    return exit_code


def _print_item(item: dict[str, Any], summary: Callable[[dict[str, Any]], str] | None) -> None:
    label = safe(item["input"])
    errors = [r for r in item["reasons"] if r["severity"] == "error"]
    if errors:
        text = "; ".join(f"{r['code']}: {r['message']}" for r in errors)
        say(f"FAIL  {label}  {safe(text)}")
    else:
        say(f"ok    {label}  {safe(summary(item)) if summary else ''}".rstrip())
    for r in item["reasons"]:
        if r["severity"] == "warning":
            note(f"warning: {label}: {r['code']}: {safe(r['message'])}")


def verify_batch(files: list[str], json_out: bool, check: Callable[[object], Verdict],
                 summary: Callable[[dict[str, Any]], str] | None = None, *,
                 fmt: str = "text", suite: str = "muretai verify") -> None:
    """The verify commands' loop: each input through the seam's parse boundary, then
    ``check`` (a ``Verdict``, or a ``MuretaiError`` naming why not), rendered as a batch
    one item at a time (a JSON Lines stdin of any length keeps memory flat)."""
    from muretai_cli.cli._formats import check_format

    fmt = check_format(fmt, json_out)
    json_out = fmt == "json"
    results = (_judged(label, raw, check) for label, raw in iter_documents(files))
    raise typer.Exit(render_batch(results, json_out, summary, fmt=fmt, suite=suite))


def _judged(label: str, raw: bytes | InputError, check: Callable[[object], Verdict]
            ) -> dict[str, Any]:
    from muretai_cli.seam import parse_document

    try:
        if isinstance(raw, InputError):
            raise raw
        verdict = check(parse_document(raw))
    except MuretaiError as exc:
        return error_result(label, exc)
    return result_of(label, [r.to_json() for r in verdict.reasons], 0 if verdict.ok else 1,
                     **dict(verdict.facts))


def did_option(value: str, name: str, *, keys: Path | None = None,
               store: IdentityStore | None = None) -> str:
    """A DID the user typed, or a name for one: one of your identities (in ``keys``), an
    org on your trust list, or (given the acting identity's ``store``) a contact you met
    through an invite, resolved and said on stderr. A malformed DID or an unknown name is a
    usage error (exit 2 ``bad-did``) naming the option, never a refusal from a peer."""
    from muretai_cli.seam import public_from_did

    if not value.startswith("did:"):
        return _did_named(value, name, keys, store)
    try:
        public_from_did(value)
    except MuretaiError as exc:
        raise InputError("bad-did", f"{name} {safe(value, limit=120)!r} is not a did:key: "
                                    f"{exc.detail}", hint="a did:key looks like did:key:z6Mk…"
                         ) from None
    return value


def _did_named(value: str, name: str, keys: Path | None, store: IdentityStore | None) -> str:
    from muretai_cli.home import dids_named, keys_dir

    found = dids_named(value, keys_dir(keys))
    if store is not None:
        from muretai_cli.inbox.invites import InviteStore

        known = {did for did, _ in found}
        found += [(c.did, f"your contact {c.name}") for c in InviteStore(store.db).contacts()
                  if c.name.casefold() == value.casefold() and c.did not in known]
    shown = safe(value, limit=120)
    if not found:
        raise InputError("bad-did", f"{name} {shown!r} is neither a did:key nor a name this "
                                    "machine knows",
                         hint="give a did:key (did:key:z6Mk…), one of your identities "
                              "(`muretai id list`), a trusted org (`muretai org list`) or a "
                              "contact (`muretai invite contacts`)")
    if len(found) > 1:
        raise InputError("ambiguous-name", f"{name} {shown!r} names {len(found)} DIDs: " +
                         "; ".join(f"{what}: {did}" for did, what in found),
                         hint="give the DID itself")
    did, what = found[0]
    note(f"{name} {shown} = {did} ({safe(what, limit=120)})")
    return did


def did_opt(flag: str, help: str) -> Any:
    """A ``typer.Option`` whose value reaches the command already resolved by
    ``did_option``: the command gets the DID, never the name, so it cannot check the name."""
    return typer.Option(flag, help=f"{help} A did:key or a name for one.",
                        metavar="DID|NAME", callback=_resolved_did)


def _resolved_did(ctx: typer.Context, param: typer.CallbackParam,
                  value: str | None) -> str | None:
    if value is None or ctx.resilient_parsing:
        return value
    from muretai_cli.cli._tree import JSON_META

    # Parsed before the command runs: the root, rendering a refusal, must know the format
    # now (--json is eager, so it is parsed already).
    ctx.meta[JSON_META] = bool(ctx.params.get("json_out"))
    return did_option(value, param.opts[0])
