"""``muretai conventions lint``: WebMCP tool results against the Conventions.

Text mode streams findings as it goes (memory stays flat) and ends with a summary line and
a table; ``--json`` prints one document listing only the results with findings. Exit 0 when
no error, 1 when any (or any warning with ``--strict``), 2 when the input cannot be read or
holds no result at all.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer

from muretai_cli.cli._formats import CiCase, FormatOpt, check_format, emit_ci
from muretai_cli.cli._input import open_input, read_input
from muretai_cli.cli._json import JsonList, emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe
from muretai_cli.errors import InputError

if TYPE_CHECKING:
    from muretai_cli.lint import LevelReport, ResultReport, Tally

app = typer.Typer(no_args_is_help=True, help="Lint WebMCP tool results against the Conventions.")

PROGRESS_AFTER = 2000  # results; below this a bar would only flicker
_VIEWS = ("visitor", "site-agent")


def _clean(value: Any) -> Any:
    """Strings that came from a result, made inert for a terminal (JSON output included)."""
    if isinstance(value, str):
        return safe(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


class _Progress:
    """A rich bar on stderr, shown only once a run passes ``PROGRESS_AFTER`` results."""

    def __init__(self, stream: BinaryIO, enabled: bool) -> None:
        self._stream = stream
        self._enabled = enabled
        self._bar: Any = None
        self._task: Any = None
        self._total: int | None = None
        try:
            info = os.fstat(stream.fileno())
            if stat.S_ISREG(info.st_mode):
                self._total = info.st_size
        except (OSError, ValueError, AttributeError):
            pass

    def tick(self, count: int) -> None:
        if not self._enabled or count % 500:
            return
        if self._bar is None:
            if count < PROGRESS_AFTER:
                return
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            from muretai_cli.cli._visitout import plain_console

            self._bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                                 TimeElapsedColumn(), console=plain_console(stderr=True),
                                 transient=True, redirect_stdout=sys.stdout.isatty())
            self._bar.start()
            self._task = self._bar.add_task("linting", total=self._total)
        done: int | None = None
        if self._total is not None:
            try:
                done = self._stream.tell()
            except OSError:
                done = None
        self._bar.update(self._task, description=f"linting: {count:,} results", completed=done)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def _print_report(report: ResultReport, mode: str) -> None:
    where = f"result {report.index}" + (f" (line {report.line})" if report.line else "")
    shapes = "; ".join(f"{s.kind} at {s.path}" for s in report.shapes) or "no convention shape"
    say(f"{where}: {shapes}" if mode != "single" else f"{shapes}")
    for f in report.findings:
        say(f"  {f.severity:<8} {f.rule:<28} {safe(f.path)}  {safe(f.detail)}")
    for found in report.handoffs:
        entries = ", ".join(
            safe(f"{e.kind} {e.to or e.url or e.endpoint or e.card or e.server or ''}".strip(),
                 limit=80) for e in found.handoff.entries) or "none"
        say(f"  handoff  at {safe(found.path)}: entries: {entries}; "
            f"dropped: {len(found.handoff.dropped)}")


def _lint_case(source: str, report: ResultReport, strict: bool) -> CiCase:
    """One CI row for a result with findings (FAIL on an error, or a warning under --strict)."""
    where = f"line {report.line}" if report.line is not None else f"result {report.index}"
    failing = report.errors > 0 or (strict and report.warnings > 0)
    message = "; ".join(f"{f.severity} {f.rule} at {f.path}: {f.detail}"
                        for f in report.findings)
    return CiCase(f"conventions lint {source}", where, "FAIL" if failing else "WARN", message,
                  file=source if source != "-" else None)


def _summary_line(tally: Tally, mode: str, failed: bool) -> str:
    shapes = ", ".join(f"{k} {v}" for k, v in tally.shapes.items()) or "none"
    return (f"{'FAIL' if failed else 'ok'}: {tally.results} result(s) linted ({mode}); "
            f"{tally.with_findings} with findings; {tally.errors} error(s), "
            f"{tally.warnings} warning(s); shapes: {shapes}")


def _print_tables(tally: Tally, levels: LevelReport | None) -> None:
    from rich.table import Table

    from muretai_cli.cli._visitout import plain_console
    from muretai_cli.lint import RULES

    console = plain_console(file=sys.stdout, soft_wrap=False)
    if tally.rules:
        table = Table(title="Findings by rule")
        for name in ("rule", "severity", "count", "what it means"):
            table.add_column(name, justify="right" if name == "count" else "left")
        for rule, count in tally.rules.most_common():
            severity, meaning = RULES[rule]
            table.add_row(rule, severity, str(count), meaning)
        console.print(table)
    if levels is not None and levels.level is not None:
        table = Table(title=f"Conformance: level {levels.level}"
                      f" · interoperates: {'yes' if levels.interoperates else 'no'}")
        for name in ("level", "met", "needs"):
            table.add_column(name)
        for status in levels.levels:
            table.add_row(f"{status.level} {status.to_json()['name']}",
                          "yes" if status.met else "no", "; ".join(status.needs))
        console.print(table)


def _print_levels(levels: LevelReport) -> None:
    for f in levels.findings:
        say(f"manifest: {f.severity:<8} {f.rule:<28} {safe(f.path)}  {safe(f.detail)}")
    if levels.level is None:
        say(f"view {levels.view}: {len(levels.tools)} tool(s), "
            f"{len(levels.findings)} finding(s)")
        return
    name = levels.to_json()["name"]
    say(f"level {levels.level} ({name}); interoperates: "
        f"{'yes' if levels.interoperates else 'no'}")
    nxt = levels.next_level
    if nxt is not None:
        say(f"  next: level {nxt.level} needs {'; '.join(nxt.needs)}")


@app.command("lint")
def lint(
    sources: Annotated[list[str], typer.Argument(metavar="FILE|-", show_default=False, help=(
        "Files (as pre-commit passes them), each one tool result, a JSON array of them, or "
        "JSON Lines; - for stdin."))],
    tools: Annotated[Path | None, typer.Option(
        "--tools", metavar="MANIFEST", show_default=False,
        help="JSON list of tool descriptors: adds the conformance level report.")] = None,
    view: Annotated[str, typer.Option(
        "--view", help="Whose tool view the manifest is: visitor or site-agent.")] = "visitor",
    gated: Annotated[bool, typer.Option(
        "--gated", help="Count level 3 as met even without a gate among the results.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too.")] = False,
    fmt: FormatOpt = "text",
    json_out: JsonOpt = False,
) -> None:
    """Check WebMCP tool results against the Conventions and the three-way exchange contract."""
    from muretai_cli.lint import Tally, level_report, lint_stream, parse_manifest

    form = check_format(fmt, json_out)
    json_out = form == "json"
    ci = form in ("junit", "github")
    cases: list[CiCase] = []
    if view not in _VIEWS:
        raise InputError("bad-usage", f"--view {view!r}: use visitor or site-agent")
    manifest = parse_manifest(read_input(str(tools))) if tools is not None else None
    if manifest is None and (gated or view != "visitor"):
        note("note: --gated and --view only change the level report, which needs --tools")
    tally = Tally()
    listed = JsonList()  # spooled: --json over a long capture keeps memory flat
    modes: list[str] = []
    for source in sources:
        before = tally.results
        stream = open_input(source)
        if len(sources) > 1 and not (ci or json_out):
            say(f"== {safe(source)}")
        progress = _Progress(stream, enabled=sys.stderr.isatty())
        run = lint_stream(stream)
        try:
            for report in run:
                tally.add(report)
                progress.tick(tally.results)
                if ci:
                    if report.findings:
                        cases.append(_lint_case(source, report, strict))
                elif json_out:
                    if report.findings:
                        listed.append({"input": source, **_clean(report.to_json())})
                elif report.findings or run.mode == "single":
                    _print_report(report, run.mode)
        finally:
            progress.stop()
            if stream is not sys.stdin.buffer:
                stream.close()
        modes.append(run.mode)
        if tally.results == before:  # an empty capture from a failed step must not pass CI
            raise InputError("no-input", f"{source}: no tool result to lint (the input is "
                                         "empty, blank or [])", hint="give one result, a JSON "
                                                                     "array of them, or JSON Lines")
    mode = modes[0] if len(set(modes)) == 1 else "mixed"
    source = sources[0] if len(sources) == 1 else f"{len(sources)} files"
    levels = None
    if manifest is not None:
        levels = level_report(manifest, gate_seen=gated or tally.well_formed_gates > 0,
                              view="site-agent" if view == "site-agent" else "visitor")
        tally.add_findings(levels.findings)
    failed = tally.errors > 0 or (strict and tally.warnings > 0)
    if ci:
        cases.append(CiCase(f"conventions lint {source}", "summary", "FAIL" if failed else "PASS",
                            _summary_line(tally, mode, failed)))
        emit_ci(cases, form, name="muretai conventions lint")
    elif json_out:
        doc: dict[str, Any] = {"ok": not failed, "input": sources[0], "inputs": sources,
                               "mode": mode, "strict": strict, "summary": tally.to_json(),
                               "results": listed}
        if levels is not None:
            doc["levels"] = levels.to_json()
        emit_json(doc)
    else:
        if levels is not None:
            _print_levels(levels)
        _print_tables(tally, levels)
        say(_summary_line(tally, mode, failed))
    if failed:
        raise typer.Exit(1)
