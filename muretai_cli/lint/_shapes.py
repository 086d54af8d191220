"""One tool result, linted: which convention shapes it carries and which rules it breaks.

Shapes are looked for in three places of a result (after unwrapping a JSON-RPC response
once): the top level, ``structuredContent``, and JSON text inside ``content[].text``. A path
into such text is written ``$.content[0].text|$.message``: the part after ``|`` is a path
inside the parsed text.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from muretai_cli.artifacts.handoff import Handoff, parse_handoff
from muretai_cli.errors import InputError
from muretai_cli.lint._rules import Finding
from muretai_cli.lint._text import contains_text, find_instruction, scan_secrets
from muretai_cli.seam import parse_document
from muretai_cli.urls import parse_base_url

ShapeKind = Literal["gate", "needs-information", "handoff", "transcript"]
SHAPES: tuple[ShapeKind, ...] = ("gate", "needs-information", "handoff", "transcript")
KNOWN_ORIGINS = ("human-direct", "agent-relay", "agent-autonomous", "site-agent")
TRANSCRIPT_KEYS = ("entries", "transcript", "messages")
_KNOWN = frozenset(KNOWN_ORIGINS)
_MISSING: Any = object()
# Keys that make a location worth a closer look; anything else is passed over at once.
_INTERESTING = frozenset({
    "ok", "needsHumanConfirmation", "needsInformation", "message", "agentHint", "question",
    "origin", "requestId", *TRANSCRIPT_KEYS, "_meta", "handoff", "muretai",
})
# Which of them each check reads: a check whose keys are all absent is not called.
_RELAYED_KEYS = frozenset({"message", "agentHint", "question"})
_TRANSCRIPT_KEYS = frozenset(TRANSCRIPT_KEYS)
_HANDOFF_KEYS = frozenset({"_meta", "handoff", "muretai"})
_WS = rb"[ \t\r\n]*"
_OK_FALSE = rb"\{" + _WS + rb'"ok"' + _WS + rb":" + _WS + rb"false" + _WS + rb"[,}]"
_OK_FIRST_AT_ROOT = re.compile(_WS + _OK_FALSE)
# A quoted string followed by ':' is always a key in valid JSON (a quote inside a string is
# escaped), so these find the text of the object under that key wherever it sits.
_OK_FIRST_UNDER = {
    anchor: re.compile(b'"' + anchor + b'"' + _WS + b":" + _WS + _OK_FALSE)
    for anchor in (b"structuredContent", b"result")
}
_JSON_OBJECT_TEXT = re.compile(r"[ \t\r\n]*\{")


@dataclass(slots=True, unsafe_hash=True)  # built per result: not frozen (3x the init)
class Shape:
    """A convention shape found at ``path``; ``well_formed`` says a gate broke no rule."""

    kind: ShapeKind
    path: str
    well_formed: bool = True

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"shape": self.kind, "path": self.path}
        if self.kind == "gate":
            out["wellFormed"] = self.well_formed
        return out


@dataclass(frozen=True, slots=True)
class HandoffFound:
    """The structural reading of a handoff envelope found at ``path``."""

    path: str
    handoff: Handoff

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, **self.handoff.to_json()}


@dataclass(slots=True)
class ResultReport:
    """What the lint found in one result. ``index`` counts from 0; ``line`` from 1."""

    index: int
    line: int | None = None
    shapes: list[Shape] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    handoffs: list[HandoffFound] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> int:
        return len(self.findings) - self.errors

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index}
        if self.line is not None:
            out["line"] = self.line
        out["shapes"] = [s.to_json() for s in self.shapes]
        out["findings"] = [f.to_json() for f in self.findings]
        if self.handoffs:
            out["handoff"] = [h.to_json() for h in self.handoffs]
        return out


def lint_bytes(raw: bytes, index: int = 0, line: int | None = None) -> ResultReport:
    """Lint one result given as the bytes of its JSON text."""
    report = ResultReport(index, line)
    try:
        doc = parse_document(raw)
    except InputError as exc:
        detail = exc.detail if exc.code == "invalid-json" else f"{exc.code}: {exc.detail}"
        report.findings.append(Finding("invalid-json", "$", detail))
        return report
    if isinstance(doc, dict):
        _lint_result(doc, raw, report)
    return report


def _lint_result(doc: dict[str, Any], raw: bytes, report: ResultReport) -> None:
    root, path, anchor = doc, "$", None
    if "jsonrpc" in doc and isinstance(doc.get("result"), dict):
        root, path, anchor = doc["result"], "$.result", b"result"
    _location(root, path, raw, anchor, report)
    structured = root.get("structuredContent")
    if isinstance(structured, dict):
        _location(structured, f"{path}.structuredContent", raw, b"structuredContent", report)
    content = root.get("content")
    if not isinstance(content, list):
        return
    for i, item in enumerate(content):
        text = item.get("text") if isinstance(item, dict) else None
        if not isinstance(text, str) or not _JSON_OBJECT_TEXT.match(text):
            continue
        inner_raw = text.encode("utf-8")
        try:
            inner = parse_document(inner_raw)
        except InputError:
            continue  # prose that happens to start with '{' is not a shape
        if isinstance(inner, dict):
            _location(inner, f"{path}.content[{i}].text|$", inner_raw, None, report)


def _location(loc: dict[str, Any], path: str, raw: bytes, anchor: bytes | None,
              report: ResultReport) -> None:
    present = _INTERESTING.intersection(loc)
    if not present:
        return
    findings = report.findings
    before = len(findings)
    gate = loc.get("needsHumanConfirmation") is True
    info = loc.get("needsInformation") is True
    if gate or info:
        _refusal(loc, path, raw, anchor, findings, gate, info)
    if not present.isdisjoint(_RELAYED_KEYS):
        _relayed_text(loc, path, findings)
    if gate:
        clean = not any(f.severity == "error" for f in findings[before:])
        report.shapes.append(Shape("gate", path, clean))
    if info:
        report.shapes.append(Shape("needs-information", path))
    if not present.isdisjoint(_TRANSCRIPT_KEYS):
        _transcripts(loc, path, report)
    if not present.isdisjoint(_HANDOFF_KEYS):
        _handoff(loc, path, report)


def _refusal(loc: dict[str, Any], path: str, raw: bytes, anchor: bytes | None,
             findings: list[Finding], gate: bool, info: bool) -> None:
    flag = "needsHumanConfirmation" if gate else "needsInformation"
    ok = loc.get("ok", _MISSING)
    if ok is _MISSING:
        findings.append(Finding("ok-missing", path,
                                f'{flag} is set but there is no "ok"; begin with "ok": false'))
    elif ok is True:
        findings.append(Finding("ok-true-with-gate", f"{path}.ok",
                                f'"ok": true with {flag}: it either happened or it needs the '
                                f'person; a refusal is "ok": false'))
    elif ok is not False:
        findings.append(Finding("ok-not-false", f"{path}.ok",
                                f'"ok" is {_brief(ok)}, not the literal false'))
    elif not _ok_false_first(raw, anchor):
        first = next(iter(loc))
        said = f"the first key is {first!r}" if first != "ok" else \
            'the text does not spell a plain "ok": false first (escaped or repeated key)'
        findings.append(Finding("ok-not-first", path,
                                f'{said}; move "ok": false to the front'))
    origin = loc.get("origin")
    if origin is None or origin == "":
        findings.append(Finding("origin-missing", path,
                                "no origin; add the page's origin, e.g. https://site.example"))
    else:
        problem = _origin_problem(origin) if isinstance(origin, str) else "is not a string"
        if problem:
            findings.append(Finding("origin-not-bare", f"{path}.origin",
                                    f"{_brief(origin)} {problem}"))
    if gate and not _nonblank(loc.get("requestId")):
        findings.append(Finding("request-id-missing", path,
                                "a gate names the pending request it created: add requestId"))
    if info and not _nonblank(loc.get("question")):
        findings.append(Finding("question-missing", path,
                                "needsInformation without the question to put to the person"))


def _relayed_text(loc: dict[str, Any], path: str, findings: list[Finding]) -> None:
    message = loc.get("message")
    hint = loc.get("agentHint")
    if isinstance(message, str) and message:
        phrase = find_instruction(message)
        if phrase is not None:
            findings.append(Finding("message-instruction-like", f"{path}.message",
                                    f"{phrase!r} reads as an instruction to an agent; "
                                    f"put it in agentHint"))
        _secrets(message, f"{path}.message", findings)
    if isinstance(hint, str) and hint:
        _secrets(hint, f"{path}.agentHint", findings)
        if isinstance(message, str) and hint.strip() and contains_text(message, hint):
            said = ("message equals agentHint; the person's text and the agent's hint are "
                    "different texts") if contains_text(hint, message) else \
                    "message contains agentHint; the hint would be read aloud to the person"
            findings.append(Finding("message-contains-agent-hint", f"{path}.message", said))
    question = loc.get("question")
    if isinstance(question, str) and question:
        _secrets(question, f"{path}.question", findings)


def _secrets(text: str, path: str, findings: list[Finding]) -> None:
    for rule, what in scan_secrets(text):
        findings.append(Finding(rule, path, f"{what}: never relay it into a model"))


def _transcripts(loc: dict[str, Any], path: str, report: ResultReport) -> None:
    for key in TRANSCRIPT_KEYS:
        items = loc.get(key)
        if not isinstance(items, list) or not any(
                isinstance(e, dict) and "origin" in e for e in items):
            continue
        report.shapes.append(Shape("transcript", f"{path}.{key}"))
        for i, entry in enumerate(items):
            origin = entry.get("origin", _MISSING) if isinstance(entry, dict) else _MISSING
            if isinstance(origin, str) and origin in _KNOWN:
                continue
            if origin is _MISSING:
                said = "no origin"
            elif isinstance(origin, str) and "://" in origin:
                said = f"{_brief(origin)} is a URL origin, but a transcript origin is a channel"
            else:
                said = f"{_brief(origin)} is not a known channel"
            report.findings.append(Finding("transcript-origin-unknown",
                                           f"{path}.{key}[{i}].origin",
                                           f"{said}; use one of {', '.join(KNOWN_ORIGINS)}"))


def _handoff(loc: dict[str, Any], path: str, report: ResultReport) -> None:
    meta = loc.get("_meta")
    if "handoff" not in loc and "muretai" not in loc and not (
            isinstance(meta, dict) and "handoff" in meta):
        return
    found = parse_handoff(loc)
    report.shapes.append(Shape("handoff", path))
    report.handoffs.append(HandoffFound(path, found))
    for dropped in found.dropped:
        where = f"{path}.{dropped.source}"
        if dropped.source != "muretai" and dropped.index >= 0:
            where += f".next[{dropped.index}]"
        report.findings.append(Finding("handoff-entry-dropped", where, dropped.reason))


def _ok_false_first(raw: bytes, anchor: bytes | None) -> bool:
    if anchor is None:
        return _OK_FIRST_AT_ROOT.match(raw) is not None
    return _OK_FIRST_UNDER[anchor].search(raw) is not None


@functools.lru_cache(maxsize=4096)
def _origin_problem(origin: str) -> str | None:
    """Why ``origin`` is not a bare origin as a browser serialises it, or None."""
    try:
        base = parse_base_url(origin, require_https=True)
    except InputError as exc:
        return f"is not an https origin ({exc.detail.split(': ', 1)[-1]})"
    if base.path or origin.endswith("/"):
        return f"has a path; an origin is scheme, host and port only: {base.origin}"
    if origin != base.origin:
        return f"is not written as a browser writes it: {base.origin}"
    return None


def _nonblank(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _brief(value: object) -> str:
    if isinstance(value, dict | list):
        text = "an object" if isinstance(value, dict) else "an array"
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:60] + "…"
