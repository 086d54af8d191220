"""The rules of the WebMCP Conventions lint: one name, one severity, one sentence each.

Everything the conventions list is an error, except two that may be innocent: text in a
``message`` that reads like an instruction to an agent, and a bare 64-hex string (it may be
a digest rather than a seed). Both are warnings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]

RULES: dict[str, tuple[Severity, str]] = {
    "invalid-json": ("error", "the result cannot be read as one JSON document"),
    "ok-missing": ("error", "a refusal carries no `ok`"),
    "ok-not-false": ("error", "a refusal's `ok` is not the JSON literal false"),
    "ok-not-first": ("error", "a refusal's text does not begin with `\"ok\": false`"),
    "ok-true-with-gate": ("error", "`ok: true` together with a gate flag"),
    "origin-missing": ("error", "a gate or needs-information result without `origin`"),
    "origin-not-bare": ("error", "`origin` is not a bare https origin (http only on loopback)"),
    "request-id-missing": ("error", "a gate without `requestId`"),
    "question-missing": ("error", "a needs-information result without `question`"),
    "message-contains-agent-hint": ("error", "`message` equals or contains `agentHint`"),
    "message-instruction-like": ("warning", "`message` holds text aimed at an agent"),
    "secret-private-key": ("error", "a private-key PEM block in text relayed to a model"),
    "secret-seed": ("error", "a 64-hex string labelled as a seed or secret"),
    "secret-jwt": ("error", "a JSON Web Token in text relayed to a model"),
    "secret-bearer": ("error", "a bearer token in text relayed to a model"),
    "secret-api-key": ("error", "an `sk-`-style API key in text relayed to a model"),
    "hex-64": ("warning", "a bare 64-hex string: a seed, or perhaps only a digest"),
    "transcript-origin-unknown": ("error", "a transcript entry without a known channel origin"),
    "handoff-entry-dropped": ("error", "a handoff entry a visitor will drop"),
    "manifest-tool-invalid": ("error", "a manifest entry that is not a named tool"),
    "view-forbidden-tool": ("error", "the site-agent view exposes a visitor-only tool"),
}


@dataclass(slots=True, unsafe_hash=True)  # built per result: not frozen (3x the init)
class Finding:
    """One broken rule at one JSON path. ``detail`` may quote untrusted text: print it safely."""

    rule: str
    path: str
    detail: str

    @property
    def severity(self) -> Severity:
        return RULES[self.rule][0]

    def to_json(self) -> dict[str, Any]:
        """A reason: ``{code, message, severity, path}``; ``rule`` and ``detail`` are the
        old names of ``code`` and ``message``, kept for one release."""
        return {"code": self.rule, "message": self.detail, "severity": self.severity,
                "path": self.path, "rule": self.rule, "detail": self.detail}
