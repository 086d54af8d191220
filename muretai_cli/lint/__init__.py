"""The WebMCP Conventions lint: tool results checked against the three-way exchange contract.

    lint_stream(binary stream) -> LintStream     iterate: one ResultReport per result
    lint_bytes(raw JSON bytes) -> ResultReport   one result
    Tally                                         counts for a summary
    parse_manifest / level_report                 conformance levels from a tool manifest

Library code: nothing here prints. Every ``Finding`` names a rule from ``RULES``, a JSON path
and a detail that may quote the result's own text (untrusted: render it safely).
"""

from __future__ import annotations

from muretai_cli.lint._input import MAX_RESULT_BYTES, Mode, RawResult, ResultReader
from muretai_cli.lint._levels import (
    LEVEL_NAMES,
    VISITOR_ONLY,
    LevelReport,
    LevelStatus,
    Manifest,
    View,
    level_report,
    parse_manifest,
)
from muretai_cli.lint._rules import RULES, Finding, Severity
from muretai_cli.lint._run import LintStream, Tally, lint_raw, lint_stream
from muretai_cli.lint._shapes import (
    KNOWN_ORIGINS,
    SHAPES,
    HandoffFound,
    ResultReport,
    Shape,
    lint_bytes,
)

__all__ = [
    "KNOWN_ORIGINS",
    "LEVEL_NAMES",
    "MAX_RESULT_BYTES",
    "RULES",
    "SHAPES",
    "VISITOR_ONLY",
    "Finding",
    "HandoffFound",
    "LevelReport",
    "LevelStatus",
    "LintStream",
    "Manifest",
    "Mode",
    "RawResult",
    "ResultReader",
    "ResultReport",
    "Severity",
    "Shape",
    "Tally",
    "View",
    "level_report",
    "lint_bytes",
    "lint_raw",
    "lint_stream",
    "parse_manifest",
]
