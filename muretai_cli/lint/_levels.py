"""Conformance levels from a page's tool manifest, and the service agent's view.

1 Attributed     ``get_conversation``
2 Conversational ``send_message`` and ``provide_context``
3 Gated          a well-formed gate among the linted results (or ``--gated``)
4 Responsive     ``await_reply``

A site is at the highest N with levels 1..N all met. Level 3 alone already interoperates.
The service agent's view must not include the three visitor-side conversation tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from muretai_cli.errors import InputError
from muretai_cli.lint._rules import Finding
from muretai_cli.seam import parse_document

View = Literal["visitor", "site-agent"]
VISITOR_ONLY = ("send_message", "provide_context", "await_reply")
LEVEL_NAMES = {1: "Attributed", 2: "Conversational", 3: "Gated", 4: "Responsive"}
_TOOLS_FOR = {1: ("get_conversation",), 2: ("send_message", "provide_context"),
              4: ("await_reply",)}
GATE_NEED = "a well-formed gate among the linted results (or --gated)"


@dataclass(frozen=True, slots=True)
class Manifest:
    """Tool names as the page registers them, and what was wrong with the list."""

    tools: tuple[str, ...]
    paths: tuple[str, ...] = ()  # each tool's JSON path in the manifest
    findings: tuple[Finding, ...] = ()


def parse_manifest(raw: bytes) -> Manifest:
    """A JSON list of tool descriptors (or ``{"tools": [...]}``); ``InputError`` otherwise."""
    doc = parse_document(raw)
    if isinstance(doc, dict) and isinstance(doc.get("tools"), list):
        doc, prefix = doc["tools"], "$.tools"
    else:
        prefix = "$"
    if not isinstance(doc, list):
        raise InputError("bad-manifest", "the manifest is not a JSON list of tool descriptors",
                         hint='write [{"name": ..., "description": ..., "inputSchema": ...}]')
    tools: list[str] = []
    paths: list[str] = []
    findings: list[Finding] = []
    for i, item in enumerate(doc):
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name.strip():
            tools.append(name)
            paths.append(f"{prefix}[{i}]")
        else:
            findings.append(Finding("manifest-tool-invalid", f"{prefix}[{i}]",
                                    "not a tool descriptor with a non-empty string name"))
    return Manifest(tuple(tools), tuple(paths), tuple(findings))


@dataclass(frozen=True, slots=True)
class LevelStatus:
    level: int
    met: bool
    needs: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "name": LEVEL_NAMES[self.level], "met": self.met,
                "needs": list(self.needs)}


@dataclass(frozen=True, slots=True)
class LevelReport:
    """``level`` is 0..4 (None for the site-agent view, which has no levels)."""

    view: View
    tools: tuple[str, ...]
    level: int | None
    interoperates: bool | None
    levels: tuple[LevelStatus, ...]
    findings: tuple[Finding, ...]

    @property
    def next_level(self) -> LevelStatus | None:
        if self.level is None or self.level >= 4:
            return None
        return self.levels[self.level]

    def to_json(self) -> dict[str, Any]:
        nxt = self.next_level
        out: dict[str, Any] = {"view": self.view, "tools": list(self.tools)}
        if self.level is not None:
            out |= {"level": self.level, "name": LEVEL_NAMES.get(self.level, "none"),
                    "interoperates": self.interoperates,
                    "levels": [s.to_json() for s in self.levels],
                    "next": None if nxt is None else
                    {"level": nxt.level, "name": LEVEL_NAMES[nxt.level], "needs": list(nxt.needs)}}
        out["findings"] = [f.to_json() for f in self.findings]
        return out


def level_report(manifest: Manifest, *, gate_seen: bool, view: View = "visitor") -> LevelReport:
    """Levels for a visitor's view; for the site agent's view, only the forbidden tools."""
    findings = list(manifest.findings)
    if view == "site-agent":
        for name, path in zip(manifest.tools, manifest.paths, strict=True):
            if name in VISITOR_ONLY:
                findings.append(Finding(
                    "view-forbidden-tool", f"{path}.name",
                    f"{name} belongs to the visiting agent's view; remove it from the service "
                    f"agent's"))
        return LevelReport(view, manifest.tools, None, None, (), tuple(findings))
    present = set(manifest.tools)
    statuses: list[LevelStatus] = []
    for level in (1, 2, 3, 4):
        if level == 3:
            needs: tuple[str, ...] = () if gate_seen else (GATE_NEED,)
        else:
            needs = tuple(f"the {t} tool" for t in _TOOLS_FOR[level] if t not in present)
        statuses.append(LevelStatus(level, not needs, needs))
    reached = 0
    for status in statuses:
        if not status.met:
            break
        reached = status.level
    return LevelReport(view, manifest.tools, reached, gate_seen, tuple(statuses),
                       tuple(findings))
