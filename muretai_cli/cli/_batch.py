"""A batch of inputs judged one by one (the verify commands): each item rendered as it
comes, memory flat, and the worst exit code (2 > 1 > 0) for the whole."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._input import iter_documents
from muretai_cli.cli._json import JsonList, emit_json
from muretai_cli.cli._out import note, say
from muretai_cli.cli._text import safe
from muretai_cli.errors import InputError, MuretaiError

if TYPE_CHECKING:
    from muretai_cli.verdict import Verdict


NowOpt = Annotated[int | None, typer.Option(
    "--now", help="Judge at this epoch second instead of the clock.", show_default=False)]


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
