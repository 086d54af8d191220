"""The values of an introduction, valid on construction, and the spellings its wire uses
for time and trust (artifacts/introduction.py mints and verifies; see docs/trust.md)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from muretai_cli.errors import Refused

INTRODUCTION_TYPE = ("VerifiableCredential", "AgentIntroduction")
PROOF_TYPE = "Ed25519Signature2020"
MODE_REQUESTED = "requested"
MODE_PROACTIVE = "proactive"
BP_SCALE = 1000  # trustLevelBp: basis points of 1.0, an integer 0..1000
DEFAULT_VALIDITY = 30 * 86400
MAX_EXPERTISE = 32  # entries in credentialSubject.expertise
MAX_EXPERTISE_CHARS = 200  # characters of one entry
MAX_URL_CHARS = 2048  # characters of issuerEndpoint

Mode = Literal["requested", "proactive", "unrecorded"]
Revoked = Collection[str] | Callable[[str], bool]

# The reference writes seconds and a Z; other clients write milliseconds or an offset.
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)?")


def iso_utc(epoch: int) -> str:
    """An epoch second as the reference writes it: ``2026-12-02T01:02:16Z``."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: object, field: str) -> float:
    """An ISO 8601 date-time as epoch seconds (no offset: UTC, as the reference reads it),
    or ``Refused('malformed')`` naming the field."""
    if not isinstance(text, str) or len(text) > 40 or not _ISO.fullmatch(text):
        raise Refused("malformed", f"{field} must be an ISO 8601 date-time such as "
                                   "2026-12-02T01:02:16Z")
    try:
        when = datetime.fromisoformat(text)  # 3.11 reads the Z itself
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp()
    except (ValueError, OverflowError):
        raise Refused("malformed", f"{field} is not a calendar date-time") from None


def iso_seconds(text: str) -> float | None:
    """``parse_iso`` of the spelling the reference writes, ``2026-12-02T01:02:16Z``: ASCII,
    the separators in place, the digits left to ``fromisoformat`` (which reads nothing but
    an ASCII digit where one goes). None for any other text, which ``parse_iso`` answers."""
    if len(text) == 20 and text[4::3] == "--T::Z" and text.isascii():
        try:
            return datetime.fromisoformat(text).timestamp()
        except ValueError:
            return None
    return None


def trust_bp(level: str) -> int:
    """A trust level a person typed, a decimal in [0, 1] with at most three places, as the
    integer basis points the wire carries (``0.873`` → 873). Never rounded, never a float."""
    try:
        value = Decimal(level.strip())
    except InvalidOperation:
        raise Refused("bad-trust", f"trust {level[:40]!r} is not a decimal number") from None
    if not value.is_finite() or not 0 <= value <= 1:
        raise Refused("bad-trust", f"trust {level[:40]!r} is outside 0.0–1.0")
    scaled = value * BP_SCALE
    if scaled != scaled.to_integral_value():
        raise Refused("bad-trust", f"trust {level[:40]!r} has more than three decimal places")
    return int(scaled)


@dataclass(frozen=True, slots=True)
class IntroductionRequest:
    """A subject's request whose signature verified, bound to a subject and an introducer.
    ``target`` is None for a request naming no DID (the introducer chooses)."""

    subject: str
    introducer: str
    target: str | None
    message_id: str
    timestamp: int
    doc: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Provenance:
    """How the introduction came to be. ``unrecorded``: the credential has no provenance
    (minted before the field existed), which the public contract tolerates."""

    mode: Mode
    request: IntroductionRequest | None = None

    def __post_init__(self) -> None:
        if (self.mode == MODE_REQUESTED) != (self.request is not None):
            raise ValueError("a requested provenance carries its request, and only it does")


@dataclass(frozen=True, slots=True)
class Introduction:
    """An introduction whose signature verified, for the subject and the recipient the
    caller expected, unexpired and unrevoked at the time it was checked. Built only by
    ``verify_introduction``; ``doc`` is the credential as received (what is signed)."""

    id: str
    issuer: str
    subject: str
    introduced_to: str
    expertise: tuple[str, ...]
    trust_bp: int
    issued_at: float
    valid_until: float
    provenance: Provenance
    issuer_endpoint: str | None
    doc: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not 0 <= self.trust_bp <= BP_SCALE:
            raise ValueError("trust_bp is 0..1000")

    def to_json(self) -> dict[str, Any]:
        """The credential as received: what a holder forwards."""
        return dict(self.doc)

    def facts(self) -> dict[str, Any]:
        """What was established, camelCase, for a report."""
        request = self.provenance.request
        return {"id": self.id, "issuer": self.issuer, "subject": self.subject,
                "introducedTo": self.introduced_to, "expertise": list(self.expertise),
                "trustLevelBp": self.trust_bp, "validUntil": self.doc["credentialSubject"]
                ["validUntil"], "provenance": self.provenance.mode,
                "requestedAt": request.timestamp if request else None,
                "issuerEndpoint": self.issuer_endpoint}


PROACTIVE = Provenance("proactive")


# For values ``introduction._verify_common`` has just proven, the frozen values are built
# by setting their slots directly: a frozen dataclass's own __init__ goes through
# object.__setattr__ by name, field by field (about twice the cost), and __post_init__ would
# repeat a check made a line before. ``Introduction(...)`` and the others still check, for
# every other caller; ``tests/unit/test_introduction_fast.py`` holds the two equal.
_NEW = object.__new__
_SLOT = Callable[[object, object], None]


def _slots(cls: type) -> tuple[_SLOT, ...]:
    return tuple(getattr(cls, f.name).__set__ for f in fields(cls))


_REQUEST_SLOTS, _PROVENANCE_SLOTS = _slots(IntroductionRequest), _slots(Provenance)
_INTRODUCTION_SLOTS = _slots(Introduction)


def proven_request(subject: str, introducer: str, target: str | None, message_id: str,
                   timestamp: int, doc: Mapping[str, Any]) -> IntroductionRequest:
    made = _NEW(IntroductionRequest)
    s0, s1, s2, s3, s4, s5 = _REQUEST_SLOTS
    s0(made, subject)
    s1(made, introducer)
    s2(made, target)
    s3(made, message_id)
    s4(made, timestamp)
    s5(made, doc)
    return made


def proven_requested(request: IntroductionRequest) -> Provenance:
    made = _NEW(Provenance)
    mode, req = _PROVENANCE_SLOTS
    mode(made, MODE_REQUESTED)
    req(made, request)
    return made


def proven_introduction(cid: str, issuer: str, subject: str, introduced_to: str,
                        expertise: tuple[str, ...], trust: int, issued_at: float,
                        valid_until: float, provenance: Provenance, issuer_endpoint: str | None,
                        doc: Mapping[str, Any]) -> Introduction:
    made = _NEW(Introduction)
    s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10 = _INTRODUCTION_SLOTS
    s0(made, cid)
    s1(made, issuer)
    s2(made, subject)
    s3(made, introduced_to)
    s4(made, expertise)
    s5(made, trust)
    s6(made, issued_at)
    s7(made, valid_until)
    s8(made, provenance)
    s9(made, issuer_endpoint)
    s10(made, doc)
    return made
