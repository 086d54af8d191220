"""What a site check found: one finding per check, PASS / FAIL / WARN / INFO, never a score.

Every FAIL and WARN carries a remedy (what to change, the rule it is measured against, and
the reminder to publish only what is true). ``Finding`` refuses to exist without one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["PASS", "FAIL", "WARN", "INFO"]
STATUSES: tuple[Status, ...] = ("PASS", "FAIL", "WARN", "INFO")
TRUTH = ("Publish only what is true: if the thing this asks for does not exist on your "
         "side, do not create the file that claims it.")


@dataclass(frozen=True, slots=True)
class Remedy:
    """What to change, the rule (spec section or RFC) it is measured against, and the note."""

    change: str
    rule: str
    note: str = TRUTH

    def to_json(self) -> dict[str, str]:
        return {"change": self.change, "rule": self.rule, "note": self.note}


@dataclass(frozen=True, slots=True)
class Finding:
    """The outcome of one check. ``facts`` are what was observed (URLs, statuses, DIDs)."""

    check: str
    title: str
    status: Status
    detail: str
    facts: Mapping[str, Any] = field(default_factory=dict)
    remedy: Remedy | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        if self.status in ("FAIL", "WARN") and self.remedy is None:
            raise ValueError(f"{self.check}: a {self.status} needs a remedy")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"check": self.check, "title": self.title, "status": self.status,
                               "detail": self.detail}
        if self.facts:
            out["facts"] = dict(self.facts)
        if self.remedy is not None:
            out["remedy"] = self.remedy.to_json()
        return out


@dataclass(frozen=True, slots=True)
class SiteReport:
    """Every finding for one site, in check order. ``ok`` is False exactly when one FAILED."""

    url: str
    findings: tuple[Finding, ...]
    checked_at: int

    @property
    def ok(self) -> bool:
        return not any(f.status == "FAIL" for f in self.findings)

    def finding(self, check: str) -> Finding:
        return next(f for f in self.findings if f.check == check)

    def counts(self) -> dict[str, int]:
        return {s: sum(f.status == s for f in self.findings) for s in STATUSES}

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "url": self.url, "checkedAt": self.checked_at,
                "counts": self.counts(), "findings": [f.to_json() for f in self.findings]}
