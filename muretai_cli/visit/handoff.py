"""Checking a handoff: every entry of a tool result, each with a verdict and named reasons.

The envelope is a suggestion. What decides is the visitor's own checking: on a DID-addressed
site the site's key names the only acceptable ``to``; on an ordinary origin the origin's
card, fetched and verified here, must name it. A card that fails vouches for nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from muretai_cli.artifacts.handoff import Handoff, HandoffEntry, parse_handoff
from muretai_cli.errors import InputError, MuretaiError, Refused
from muretai_cli.urls import BaseUrl, base_from_any, did_site_key, origin_of
from muretai_cli.verdict import Reason, Verdict, error, warning
from muretai_cli.visit.card import CardCheck, EnvelopeResult, judge_card, split_card_document

if TYPE_CHECKING:
    from muretai_cli.home import PinStore, TrustList
    from muretai_cli.net import SafeClient


class CardSource(Protocol):
    """Where a handoff check gets cards: fetched (online) or given (offline)."""

    origin: BaseUrl

    def card_at(self, base: BaseUrl) -> CardCheck:
        """The judged card of ``base`` (on the dialled origin), or raise why not."""
        ...


class OnlineCards:
    """Cards fetched under the card rules, one fetch per base URL, one shared client."""

    def __init__(self, origin: BaseUrl, client: SafeClient, *, now: int,
                 pins: PinStore | None = None, trust: TrustList | None = None,
                 require_signed: bool = False) -> None:
        self.origin = origin
        self.client = client
        self.now = now
        self.pins = pins
        self.trust = trust
        self.require_signed = require_signed
        self._cache: dict[str, CardCheck | MuretaiError] = {}

    def card_at(self, base: BaseUrl) -> CardCheck:
        from muretai_cli.visit.card import fetch_card

        cached = self._cache.get(base.text)
        if cached is None:
            try:
                cached = fetch_card(base, client=self.client, now=self.now, pins=self.pins,
                                    trust=self.trust, require_signed=self.require_signed)
            except MuretaiError as exc:
                cached = exc
            self._cache[base.text] = cached
        if isinstance(cached, MuretaiError):
            raise cached
        return cached


class OfflineCards:
    """No network: the card given with ``--card`` (a signed envelope or a plain card), if any.

    A ``connect`` card URL is accepted only when it names that card's base.
    """

    def __init__(self, origin: BaseUrl, card_doc: Mapping[str, Any] | None, *, now: int,
                 pins: PinStore | None = None, trust: TrustList | None = None,
                 require_signed: bool = False) -> None:
        self.origin = origin
        self._check: CardCheck | MuretaiError
        if card_doc is None:
            self._check = Refused("no-card-offline", "offline, and no card was given "
                                                     "(--card F)")
            return
        try:
            card, envelope = split_card_document(card_doc)
        except MuretaiError as exc:
            self._check = exc
            return
        found = EnvelopeResult.unsigned() if envelope is None else EnvelopeResult.signed(envelope)
        self._check = judge_card(origin, card, found, now=now, pins=pins, trust=trust,
                                 require_signed=require_signed)

    def card_at(self, base: BaseUrl) -> CardCheck:
        if base != self.origin:
            raise Refused("connect-not-given-card",
                          f"offline, only the card given with --card ({self.origin.text}) can "
                          f"be checked, not {base.text}")
        if isinstance(self._check, MuretaiError):
            raise self._check
        return self._check


@dataclass(frozen=True, slots=True)
class EntryCheck:
    entry: HandoffEntry
    verdict: Verdict
    needs_person: bool = False
    card: CardCheck | None = None  # the card that vouched for ``to`` (dm/a2a)

    @property
    def followable(self) -> bool:
        return self.entry.kind == "dm" and self.verdict.ok

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry.to_json(), "ok": self.verdict.ok,
                "followable": self.followable, "needsPerson": self.needs_person,
                "reasons": [r.to_json() for r in self.verdict.reasons]}


@dataclass(frozen=True, slots=True)
class HandoffReport:
    origin: BaseUrl
    handoff: Handoff
    entries: tuple[EntryCheck, ...]
    card: CardCheck | None = None
    card_error: MuretaiError | None = None
    ignored: tuple[str, ...] = field(default=())

    @property
    def followable(self) -> tuple[EntryCheck, ...]:
        return tuple(e for e in self.entries if e.followable)

    @property
    def suggested_message(self) -> str | None:
        for item in self.followable:
            if item.entry.message:
                return item.entry.message
        return None

    @property
    def exit_code(self) -> int:
        """0 when a dm entry may be followed; 3/4/5 when the origin's card could not be
        fetched; else 1."""
        if self.followable:
            return 0
        if self.card_error is not None and self.card_error.exit_code in (3, 4, 5):
            return self.card_error.exit_code
        return 1

    def refusal(self) -> tuple[str, str] | None:
        """Why nothing may be followed (a code and a sentence), naming the real cause: the
        card, else the first entry's first error, else that there was no entry at all;
        None when a dm entry may be followed."""
        if self.exit_code == 0:
            return None
        if self.card_error is not None:
            return self.card_error.code, self.card_error.detail
        for item in self.entries:
            if item.verdict.errors:
                first = item.verdict.errors[0]
                entry = item.entry
                return first.code, (f"no dm entry may be followed; entry {entry.index} "
                                    f"({entry.kind}): {first.detail}")
        if not self.entries:
            return "no-handoff", "the result carries no valid handoff entry"
        return "no-followable-entry", "no dm entry may be followed (no entry is a dm)"

    def to_json(self) -> dict[str, Any]:
        org = self.card.org if self.card is not None else None
        out: dict[str, Any] = {
            "ok": self.exit_code == 0, "origin": self.origin.text,
            "handoff": self.handoff.present, "sources": list(self.handoff.sources),
            "entries": [e.to_json() for e in self.entries],
            "dropped": [d.to_json() for d in self.handoff.dropped],
            "card": self.card.to_json() if self.card is not None else None,
            "org": org.to_json() if org is not None else None,
            "suggestedMessage": self.suggested_message,
            "followable": bool(self.followable),  # a bool, as on each entry
            "followableCount": len(self.followable),
        }
        if self.card_error is not None:
            out["cardError"] = {"code": self.card_error.code, "message": self.card_error.detail,
                                "exit": self.card_error.exit_code,
                                "error": self.card_error.code, "detail": self.card_error.detail}
        if self.ignored:
            out["ignoredFields"] = list(self.ignored)
        return out


@lru_cache(maxsize=256)
def _base_of(url: str) -> BaseUrl:
    """``base_from_any``, remembered: batches name the same few card URLs again and again."""
    return base_from_any(url)


# As card fetch refuses (urls.parse_base_url), plus C1 controls and bidi overrides, which
# make a URL a person is asked to open show other than it is.
_UNSAFE_URL = re.compile("[\x00-\x20\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_IGNORED = ("from", "as", "agent_name", "agentName", "sender", "identity")


class _Checker:
    def __init__(self, cards: CardSource, *, person: bool, now: int) -> None:
        self.cards = cards
        self.origin = cards.origin
        self.person = person
        self.now = now
        self.site_did = did_site_key(cards.origin)
        self.card: CardCheck | None = None
        self.card_error: MuretaiError | None = None

    def origin_card(self) -> CardCheck:
        card = self.cards.card_at(self.origin)
        self.card = card
        return card

    def _card_or_reason(self, base: BaseUrl, what: str) -> CardCheck | Reason:
        try:
            return self.cards.card_at(base) if base != self.origin else self.origin_card()
        except MuretaiError as exc:
            if base == self.origin and self.card_error is None:
                self.card_error = exc
            code = "card-refused" if exc.exit_code in (1, 2) else "card-unavailable"
            if exc.code in ("no-card-offline", "connect-not-given-card"):
                code = exc.code
            return error(code, f"{what}: {exc.code}: {exc.detail}")

    def vouch_for(self, to: str) -> tuple[list[Reason], CardCheck | None]:
        """Who may ``to`` be: the DID-addressed site's key, or the verified origin card's DID."""
        if self.site_did is not None:
            if to != self.site_did:
                return [error("to-not-site-did", f"the site {self.origin.text} is "
                                                 f"{self.site_did}; the handoff names {to}")
                        ], None
            return [], None
        found = self._card_or_reason(self.origin, f"the card of {self.origin.text}")
        if isinstance(found, Reason):
            return [found], None
        if not found.ok:
            codes = ", ".join(r.code for r in found.verdict.errors)
            return [error("card-refused", f"the card of {self.origin.text} failed ({codes}); "
                                          "it vouches for nothing")], found
        if found.did != to:
            return [error("to-not-on-card", f"the card of {self.origin.text} names "
                                            f"{found.did}; the handoff names {to}")], found
        if found.signature == "unsigned":
            return [warning("vouched-by-unsigned-card",
                            f"{to} is named by an unsigned card of {self.origin.text}")], found
        return [], found

    def check_connect(self, connect: object, to: str) -> list[Reason]:
        if isinstance(connect, dict):
            from muretai_cli.artifacts.grant import check_grant

            try:
                check_grant(connect, for_did=to, now=self.now)
            except MuretaiError as exc:
                return [error(exc.code, f"connect grant: {exc.detail}")]
            return []
        if not isinstance(connect, str):
            return [error("connect-malformed", "connect is neither a grant nor a card URL")]
        try:
            base = _base_of(connect)
        except InputError as exc:
            return [error("connect-bad-url", f"connect: {exc.detail}")]
        if base.origin != self.origin.origin:
            return [error("connect-off-origin", f"connect names {base.origin}, not the dialled "
                                                f"origin {self.origin.origin}")]
        found = self._card_or_reason(base, f"connect card {base.text}")
        if isinstance(found, Reason):
            return [found]
        if not found.ok:
            codes = ", ".join(r.code for r in found.verdict.errors)
            return [error("connect-card-refused", f"the connect card {base.text} failed "
                                                  f"({codes})")]
        if found.did != to:
            return [error("connect-card-other-did", f"the connect card {base.text} names "
                                                    f"{found.did}, not {to}")]
        if found.contact is not None and not found.contact.ok:
            return [warning("contact-grant-refused", "the connect card's contact grant is "
                                                     f"refused ({found.contact.codes()[0]}); "
                                                     "a first DM to a closed door will fail")]
        return []

    def check_urls(self, entry: HandoffEntry, names: tuple[str, ...]) -> list[Reason]:
        reasons: list[Reason] = []
        for name in names:
            url = getattr(entry, name)
            if url is None:
                continue
            if _UNSAFE_URL.search(url):
                reasons.append(error("bad-url", f"{name} {url[:200]!r} contains spaces or "
                                                "control characters; no URL needs them"))
                continue
            origin = origin_of(url, https_unless_loopback=True)
            if origin == self.origin.origin:
                continue
            where = origin or "an unusable URL"
            text = f"{name} {url[:200]!r} is off the dialled origin {self.origin.origin} ({where})"
            if entry.to is None:
                reasons.append(error("off-origin", text))
            else:
                reasons.append(warning("off-origin", text))
        return reasons

    def check(self, entry: HandoffEntry) -> EntryCheck:
        reasons: list[Reason] = []
        card: CardCheck | None = None
        if entry.to is not None:
            found, card = self.vouch_for(entry.to)
            reasons.extend(found)
        if entry.kind == "dm":
            if entry.to is None:  # the handoff parser keeps no dm without a "to"
                reasons.append(error("missing-to", "a dm entry names no recipient"))
            elif entry.connect is not None and not any(r.severity == "error" for r in reasons):
                reasons.extend(self.check_connect(entry.connect, entry.to))
            return EntryCheck(entry, Verdict.of(entry.kind, reasons), card=card)
        if entry.kind == "a2a":
            reasons.extend(self.check_urls(entry, ("endpoint", "card")))
            return EntryCheck(entry, Verdict.of(entry.kind, reasons), card=card)
        if entry.kind == "ui":
            reasons.extend(self.check_urls(entry, ("url",)))
            if not self.person:
                reasons.append(error("needs-person", "a ui entry is for a person to open; "
                                                     "refused without --person"))
            return EntryCheck(entry, Verdict.of(entry.kind, reasons), needs_person=True)
        reasons.extend(self.check_urls(entry, ("server",)))
        return EntryCheck(entry, Verdict.of(entry.kind, reasons))


def _ignored_fields(doc: object) -> tuple[str, ...]:
    """Identity-like fields the site sent, listed so the report can say they were ignored."""
    from muretai_cli.artifacts.handoff import unwrap_result

    found: list[str] = []
    result = unwrap_result(doc)
    if not isinstance(result, dict):
        return ()
    meta = result.get("_meta")
    for where, env in (("_meta.handoff", meta.get("handoff") if isinstance(meta, dict)
                        else None), ("handoff", result.get("handoff")),
                       ("muretai", result.get("muretai"))):
        if not isinstance(env, dict):
            continue
        nxt = env.get("next")
        items: list[Any] = nxt if isinstance(nxt, list) else [env]
        for index, item in enumerate(items):
            if isinstance(item, dict):
                found.extend(f"{where}[{index}].{k}" for k in _IGNORED if k in item)
    return tuple(found)


def check_handoff(doc: object, cards: CardSource, *, person: bool, now: int) -> HandoffReport:
    """Check a tool result's handoff against the dialled origin (``cards.origin``)."""
    handoff = parse_handoff(doc)
    checker = _Checker(cards, person=person, now=now)
    entries = tuple(checker.check(entry) for entry in handoff.entries)
    return HandoffReport(cards.origin, handoff, entries, checker.card, checker.card_error,
                         _ignored_fields(doc))


def check_handoff_bytes(raw: bytes, cards: CardSource, *, person: bool, now: int
                        ) -> HandoffReport:
    """``check_handoff`` on bytes from a file or stdin, through the parse boundary."""
    from muretai_cli.seam import parse_document

    return check_handoff(parse_document(raw), cards, person=person, now=now)
