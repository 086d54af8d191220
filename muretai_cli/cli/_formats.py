"""CI formats, one renderer for every command: JUnit XML and GitHub annotation lines.

A command turns its result into ``CiCase`` rows (one per check, file or result) and hands
them here; ``--format junit`` then writes one ``<testcase>`` per row, ``--format github``
one ``::error``/``::warning`` line per FAIL/WARN row. Peer text passes through ``safe()``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import typer

from muretai_cli.cli._text import safe

CiStatus = Literal["PASS", "FAIL", "WARN", "INFO", "ERROR"]
FORMATS = ("text", "json", "junit", "github")
FormatOpt = Annotated[str, typer.Option(
    "--format", help="text | json | junit (JUnit XML, one testcase per check) | github "
                     "(::error/::warning annotation lines).")]


@dataclass(frozen=True, slots=True)
class CiCase:
    """One row: ``suite`` groups rows, ``name`` names the row, ``message`` says why."""

    suite: str
    name: str
    status: CiStatus
    message: str = ""
    file: str | None = None


def check_format(value: str, json_out: bool) -> str:
    """The format a command renders: ``--json`` is ``--format json``; an unknown one is exit 2."""
    from muretai_cli.errors import InputError

    if value not in FORMATS:
        raise InputError("bad-format", f"--format {safe(value, limit=40)!r} is not one of "
                                       f"{', '.join(FORMATS)}")
    return "json" if json_out else value


def junit(cases: Sequence[CiCase], *, name: str) -> str:
    """JUnit XML: one testsuite per ``suite``, FAIL as <failure>, ERROR as <error>; WARN and
    INFO pass, their message kept in <system-out>."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name=safe(name, limit=200))
    suites: dict[str, ET.Element] = {}
    for case in cases:
        suite = suites.get(case.suite)
        if suite is None:
            suite = suites[case.suite] = ET.SubElement(root, "testsuite",
                                                       name=safe(case.suite, limit=400))
        attrs = {"classname": safe(case.suite, limit=400), "name": safe(case.name, limit=400)}
        if case.file:
            attrs["file"] = safe(case.file, limit=400)
        node = ET.SubElement(suite, "testcase", attrs)
        message = safe(case.message, multiline=True, limit=4000)
        if case.status == "FAIL":
            ET.SubElement(node, "failure", message=safe(case.message, limit=400)).text = message
        elif case.status == "ERROR":
            ET.SubElement(node, "error", message=safe(case.message, limit=400)).text = message
        elif message:
            ET.SubElement(node, "system-out").text = f"{case.status}: {message}"
    for suite_name, suite in suites.items():
        rows = [c for c in cases if c.suite == suite_name]
        suite.set("tests", str(len(rows)))
        suite.set("failures", str(sum(c.status == "FAIL" for c in rows)))
        suite.set("errors", str(sum(c.status == "ERROR" for c in rows)))
    root.set("tests", str(len(cases)))
    root.set("failures", str(sum(c.status == "FAIL" for c in cases)))
    root.set("errors", str(sum(c.status == "ERROR" for c in cases)))
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


def _escape(text: str, *, prop: bool = False) -> str:
    out = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return out.replace(":", "%3A").replace(",", "%2C") if prop else out


def github(cases: Sequence[CiCase]) -> str:
    """GitHub workflow commands: ``::error`` for FAIL/ERROR, ``::warning`` for WARN."""
    lines = []
    for case in cases:
        level = {"FAIL": "error", "ERROR": "error", "WARN": "warning"}.get(case.status)
        if level is None:
            continue
        props = f"title={_escape(safe(f'{case.suite}: {case.name}', limit=200), prop=True)}"
        if case.file:
            props = f"file={_escape(safe(case.file, limit=400), prop=True)}," + props
        lines.append(f"::{level} {props}::{_escape(safe(case.message, multiline=True))}")
    return "\n".join(lines) + ("\n" if lines else "")


def emit_ci(cases: Sequence[CiCase], fmt: str, *, name: str) -> None:
    """Write ``cases`` to stdout as JUnit XML or GitHub annotations."""
    sys.stdout.write(junit(cases, name=name) + "\n" if fmt == "junit" else github(cases))


def batch_cases(results: Sequence[dict[str, Any]], codes: Sequence[int], *, suite: str
                ) -> list[CiCase]:
    """One row per batch item (``verify``, ``handoff check``): exit 2 is ERROR, 1 is FAIL,
    a warning is WARN, else PASS. ``codes`` are the items' exit codes, in order."""
    out = []
    for item, code in zip(results, codes, strict=True):
        reasons = item.get("reasons") or []
        errors = [r for r in reasons if r.get("severity") == "error"]
        warnings = [r for r in reasons if r.get("severity") == "warning"]
        shown = errors or warnings
        message = "; ".join(f"{r.get('code')}: {r.get('message', r.get('detail'))}"
                            for r in shown)
        status: CiStatus = "ERROR" if code >= 2 else "FAIL" if code == 1 \
            else "WARN" if warnings else "PASS"
        label = str(item.get("input"))
        out.append(CiCase(suite, label, status, message, file=label if "/" in label
                          or "." in label else None))
    return out
