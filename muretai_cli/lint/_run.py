"""The stream the CLI and the bench share: bytes in, one ``ResultReport`` per result out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from muretai_cli.lint._input import MAX_RESULT_BYTES, Mode, RawResult, ResultReader
from muretai_cli.lint._rules import Finding
from muretai_cli.lint._shapes import ResultReport, lint_bytes


def lint_raw(item: RawResult) -> ResultReport:
    if item.problem is not None:
        return ResultReport(item.index, item.line,
                            findings=[Finding("invalid-json", "$", item.problem)])
    return lint_bytes(item.raw, item.index, item.line)


class LintStream:
    """Iterate to lint a stream result by result; memory stays flat whatever its length."""

    def __init__(self, stream: BinaryIO, *, max_result_bytes: int = MAX_RESULT_BYTES) -> None:
        self._reader = ResultReader(stream, max_result_bytes=max_result_bytes)

    @property
    def mode(self) -> Mode:
        return self._reader.mode

    def __iter__(self) -> Iterator[ResultReport]:
        for item in self._reader:  # lint_raw, inlined: this loop runs once per result
            if item.problem is None:
                yield lint_bytes(item.raw, item.index, item.line)
            else:
                yield lint_raw(item)


def lint_stream(stream: BinaryIO, *, max_result_bytes: int = MAX_RESULT_BYTES) -> LintStream:
    """The one entry point for linting a capture: a file, stdin or any binary stream."""
    return LintStream(stream, max_result_bytes=max_result_bytes)


@dataclass(slots=True)
class Tally:
    """Counts over a run, for the summary; constant size whatever the input's length."""

    results: int = 0
    with_findings: int = 0
    errors: int = 0
    warnings: int = 0
    well_formed_gates: int = 0
    handoff_entries: int = 0
    rules: Counter[str] = field(default_factory=Counter)
    shapes: Counter[str] = field(default_factory=Counter)

    def add(self, report: ResultReport) -> None:
        self.results += 1
        for shape in report.shapes:
            self.shapes[shape.kind] += 1
            if shape.kind == "gate" and shape.well_formed:
                self.well_formed_gates += 1
        for found in report.handoffs:
            self.handoff_entries += len(found.handoff.entries)
        if report.findings:
            self.with_findings += 1
            for finding in report.findings:
                self.rules[finding.rule] += 1
                if finding.severity == "error":
                    self.errors += 1
                else:
                    self.warnings += 1

    def add_findings(self, findings: tuple[Finding, ...]) -> None:
        """Findings that belong to no result (the manifest's)."""
        for finding in findings:
            self.rules[finding.rule] += 1
            if finding.severity == "error":
                self.errors += 1
            else:
                self.warnings += 1

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "results": self.results, "withFindings": self.with_findings,
            "errors": self.errors, "warnings": self.warnings,
            "shapes": {k: self.shapes.get(k, 0)
                       for k in ("gate", "needs-information", "handoff", "transcript")},
            "wellFormedGates": self.well_formed_gates, "handoffEntries": self.handoff_entries,
            "rules": dict(sorted(self.rules.items()))}
        return out
