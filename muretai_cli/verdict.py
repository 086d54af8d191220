"""Verdicts: what a check concluded, with named reasons.

A verdict is data, never printing. ``ok`` is False exactly when at least one reason has
severity ``error``; warnings never make a verdict fail. Construction enforces that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Reason:
    """A named finding: ``code`` is stable and machine-readable, ``detail`` is for people."""

    code: str
    detail: str
    severity: Severity = "error"

    def __post_init__(self) -> None:
        if not self.code:
            raise ValueError("a Reason needs a code")
        if self.severity not in ("error", "warning"):
            raise ValueError(f"unknown severity {self.severity!r}")

    def to_json(self) -> dict[str, str]:
        """``{code, message, severity}``; ``detail`` repeats ``message`` (its old name, kept
        for one release)."""
        return {"code": self.code, "message": self.detail, "severity": self.severity,
                "detail": self.detail}


def error(code: str, detail: str) -> Reason:
    return Reason(code, detail, "error")


def warning(code: str, detail: str) -> Reason:
    return Reason(code, detail, "warning")


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one check. ``facts`` carries what was established (a DID, a card)."""

    subject: str
    reasons: tuple[Reason, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, subject: str, reasons: Iterable[Reason] = (),
           facts: Mapping[str, Any] | None = None) -> Verdict:
        return cls(subject, tuple(reasons), dict(facts or {}))

    @property
    def ok(self) -> bool:
        return not any(r.severity == "error" for r in self.reasons)

    @property
    def errors(self) -> tuple[Reason, ...]:
        return tuple(r for r in self.reasons if r.severity == "error")

    @property
    def warnings(self) -> tuple[Reason, ...]:
        return tuple(r for r in self.reasons if r.severity == "warning")

    def codes(self) -> list[str]:
        return [r.code for r in self.reasons]

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "subject": self.subject,
            "reasons": [r.to_json() for r in self.reasons],
            **({"facts": dict(self.facts)} if self.facts else {}),
        }
