"""Fetching an Agent Card and judging it: url, signature, DID, pin, contact grant, org.

One function turns a response body into a card (``card_from_body``), one judges a card
with its envelope (``judge_card``, used online and offline alike), and one fetches
(``fetch_card``). A signed envelope that fails is *refused*, never called unsigned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import DeadlineExceeded, InputError, MuretaiError, Refused
from muretai_cli.urls import (
    CARD_PATH,
    CARD_SIG_PATH,
    LEGACY_CARD_PATH,
    BaseUrl,
    base_from_any,
    parse_base_url,
)
from muretai_cli.verdict import Reason, Verdict, error, warning

if TYPE_CHECKING:
    from muretai_cli.home import PinStore, TrustList
    from muretai_cli.net import SafeClient

Signature = Literal["verified", "unsigned", "refused"]
PinState = Literal["new", "match", "conflict", "unpinned"]


@dataclass(frozen=True, slots=True)
class EnvelopeResult:
    """What was found beside a card, one of three: a signed envelope to judge, no envelope
    (and why not), or an envelope refused before it could be judged."""

    envelope: object | None = None
    unsigned_why: str | None = None
    refusal: Reason | None = None

    def __post_init__(self) -> None:
        if self.envelope is not None and (self.unsigned_why or self.refusal):
            raise InputError("bad-envelope-result", "a found envelope has no 'why unsigned' "
                                                    "and no refusal")
        if self.refusal is not None and self.unsigned_why:
            raise InputError("bad-envelope-result", "a refused envelope is not 'unsigned'")

    @classmethod
    def signed(cls, envelope: object) -> EnvelopeResult:
        return cls(envelope=envelope)

    @classmethod
    def unsigned(cls, why: str | None = None) -> EnvelopeResult:
        return cls(unsigned_why=why)

    @classmethod
    def refused(cls, reason: Reason) -> EnvelopeResult:
        return cls(refusal=reason)


@dataclass(frozen=True, slots=True)
class CardCheck:
    """What a card established. ``ok`` is False when any rule refused it."""

    base: BaseUrl
    verdict: Verdict
    card: Mapping[str, Any] | None
    signature: Signature
    pin: PinState = "unpinned"
    contact: Verdict | None = None
    org: Verdict | None = None
    fetched_from: str | None = None
    envelope_ts: int | None = None
    envelope: Mapping[str, Any] | None = None  # the signed envelope, when it verified

    @property
    def ok(self) -> bool:
        return self.verdict.ok

    @property
    def did(self) -> str | None:
        did = self.card.get("did") if self.card else None
        return did if isinstance(did, str) else None

    @property
    def endpoint(self) -> str | None:
        url = self.card.get("url") if self.card else None
        return url if isinstance(url, str) else None

    def to_json(self) -> dict[str, Any]:
        card = self.card or {}
        out: dict[str, Any] = {
            "ok": self.ok, "origin": self.base.text, "did": self.did, "url": self.endpoint,
            "name": card.get("name") if isinstance(card.get("name"), str) else None,
            "signature": self.signature, "pin": self.pin,
            "reasons": [r.to_json() for r in self.verdict.reasons],
        }
        if self.fetched_from:
            out["fetchedFrom"] = self.fetched_from
        if self.envelope_ts is not None:
            out["envelopeTs"] = self.envelope_ts
        out["contact"] = self.contact.to_json() if self.contact else None
        out["org"] = self.org.to_json() if self.org else None
        return out


@lru_cache(maxsize=512)
def canonical_base(text: str) -> BaseUrl | None:
    """The canonical base a URL names (http allowed, as a card may name loopback), or None."""
    try:
        return parse_base_url(text, require_https=False)
    except InputError:
        return None


def card_from_body(raw: bytes, where: str) -> dict[str, Any]:
    """The one boundary from a response body (or file) to a card object."""
    from muretai_cli.seam import parse_document

    try:
        doc = parse_document(raw)
    except InputError as exc:
        raise Refused("malformed-card", f"{where}: {exc.detail}") from None
    if not isinstance(doc, dict):
        raise Refused("malformed-card", f"{where}: a card is a JSON object")
    return doc


def split_card_document(doc: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``--card F``: a signed envelope gives ``(its card, envelope)``; a plain card, no envelope."""
    if doc.get("typ") == "agentcard" or ("card" in doc and "sig" in doc):
        card = doc.get("card")
        if not isinstance(card, dict):
            raise Refused("malformed-envelope", "the envelope's card is not an object")
        return card, dict(doc) if not isinstance(doc, dict) else doc
    return dict(doc) if not isinstance(doc, dict) else doc, None


def _grant_verdict(grant: object, did: str, now: int) -> Verdict:
    from muretai_cli.artifacts.grant import check_grant

    try:
        ok = check_grant(grant, for_did=did, now=now)
    except MuretaiError as exc:
        return Verdict.of("contact", [error(exc.code, f"card.contact: {exc.detail}")])
    facts: dict[str, Any] = {"id": ok.id, "uses": ok.uses, "exp": ok.exp}
    if ok.purpose is not None:
        facts["purpose"] = ok.purpose
    return Verdict.of("contact", facts=facts)


def org_verdict(doc: object, agent_did: str, now: int, trust: TrustList | None) -> Verdict:
    """A membership checked for ``agent_did``; its name is *claimed* unless the org is trusted."""
    from muretai_cli.artifacts.org import check_membership

    try:
        ok = check_membership(doc, agent_did=agent_did, now=now)
    except MuretaiError as exc:
        return Verdict.of("org", [error(exc.code, f"card.org: {exc.detail}")])
    trusted = trust.get(ok.org_did) if trust is not None else None
    facts: dict[str, Any] = {"orgDid": ok.org_did, "claimedName": ok.org_name,
                             "trusted": trusted is not None}
    if trusted is not None:
        facts["trustedName"] = trusted.name
    if ok.role is not None:
        facts["role"] = ok.role
    reasons = [] if trusted else [warning("org-not-trusted", f"the org name "
                                          f"{ok.org_name[:80]!r} is as claimed; "
                                          f"{ok.org_did} is not in your trust list")]
    return Verdict.of("org", reasons, facts)


def _envelope_reasons(card: Mapping[str, Any], envelope: object, now: int
                      ) -> tuple[list[Reason], Signature, int | None]:
    from muretai_cli.seam import verify_served_card
    from muretai_cli.visit.offline import card_freshness

    try:
        opened = verify_served_card(envelope, card, expected_did=str(card["did"]))
    except MuretaiError as exc:
        code = exc.code if exc.code.startswith("envelope-") else f"envelope-{exc.code}"
        return [error(code, f"the signed envelope is refused: {exc.detail}")], "refused", None
    return card_freshness(opened.ts, now), "verified", opened.ts


def judge_card(base: BaseUrl, card: object, found: EnvelopeResult, *, now: int,
               expected_did: str | None = None, require_signed: bool = False,
               pins: PinStore | None = None, record_pin: bool = False,
               trust: TrustList | None = None, fetched_from: str | None = None) -> CardCheck:
    """Every rule a card must meet, for the base it was dialled at. Pure but for the pin."""
    from muretai_cli.seam import verifying_key_from_did

    if not isinstance(card, dict) or not isinstance(card.get("did"), str):
        return CardCheck(base, Verdict.of(base.text, [error(
            "malformed-card", "a card is an object naming its did")]), None, "refused")
    did = card["did"]
    try:
        verifying_key_from_did(did)
    except MuretaiError as exc:
        return CardCheck(base, Verdict.of(base.text, [error(
            "malformed-card", f"the card's did is unusable: {exc.detail}")]), card, "refused")
    reasons: list[Reason] = []
    url = card.get("url")
    if not isinstance(url, str) or canonical_base(url) != base:
        reasons.append(error("card-url-mismatch", f"the card's url {str(url)[:200]!r} does not "
                                                  f"name the base dialled, {base.text}"))
    ts: int | None = None
    if found.refusal is not None:
        reasons.append(found.refusal)
        signature: Signature = "refused"
    elif found.envelope is None:
        why = f" ({found.unsigned_why})" if found.unsigned_why else ""
        if require_signed:
            reasons.append(error("unsigned-card", f"the card has no signed envelope{why}, and "
                                                  "an unsigned card vouches for nothing here "
                                                  "(anyone on the path could have written "
                                                  "it)"))
        else:
            reasons.append(warning("unsigned-card", f"the card has no signed envelope{why}"))
        signature = "unsigned"
    else:
        judged, signature, ts = _envelope_reasons(card, found.envelope, now)
        reasons.extend(judged)
    if expected_did is not None and did != expected_did:
        reasons.append(error("did-mismatch", f"the card names {did}, not {expected_did}"))
    pin_state: PinState = "unpinned"
    pinned = pins.get(base.text) if pins is not None else None
    if pinned is not None and pinned.did != did:
        pin_state = "conflict"
        reasons.append(error("pin-mismatch",
                             f"{base.text} is pinned to {pinned.did}; this card names {did}. "
                             f"If the change is expected, run: muretai card forget {base.text}"))
    elif pinned is not None:
        pin_state = "match"
    contact = _grant_verdict(card["contact"], did, now) if "contact" in card else None
    org = org_verdict(card["org"], did, now, trust) if "org" in card else None
    verdict = Verdict.of(base.text, reasons, {"did": did})
    if verdict.ok and signature == "verified" and pins is not None and record_pin:
        pins.record(base.text, did, now)
        pin_state = "match" if pinned is not None else "new"
    kept = found.envelope if signature == "verified" and isinstance(found.envelope, dict) \
        else None
    return CardCheck(base, verdict, card, signature, pin_state, contact, org, fetched_from, ts,
                     kept)


def fetch_card(url: str | BaseUrl, *, client: SafeClient, now: int,
               expected_did: str | None = None, require_signed: bool = False,
               pins: PinStore | None = None, record_pin: bool = True,
               trust: TrustList | None = None) -> CardCheck:
    """GET the card (falling back to agent.json on 404/410) and its envelope, then judge.

    Raises ``Unreachable``/``DeadlineExceeded`` (with what was not reached), ``PeerRefused``
    for an HTTP refusal of the card, ``Refused`` for no card, a body over the cap or a
    redirect to another origin.
    """
    from muretai_cli.net import http_refusal

    base = url if isinstance(url, BaseUrl) else base_from_any(url)
    card_url, legacy_url, sig_url = (base.join(CARD_PATH), base.join(LEGACY_CARD_PATH),
                                     base.join(CARD_SIG_PATH))
    planned = [card_url, sig_url]
    try:
        result = client.get(card_url)
        if result.status in (404, 410):
            planned = [legacy_url, sig_url]
            result = client.get(legacy_url)
            if result.status in (404, 410):
                raise Refused("no-card", f"no card at {card_url} nor at {legacy_url} "
                                         f"(HTTP {result.status})")
        refusal = http_refusal(result)
        if refusal is not None:
            raise refusal
        card = card_from_body(result.body, result.url)
        found = _fetch_envelope(client, sig_url)
    except DeadlineExceeded:
        started = {a["url"] for a in client.attempts}
        for planned_url in planned:
            if planned_url not in started and not any(
                    s["url"] == planned_url for s in client.skipped):
                client.skip("GET", planned_url)
        raise client.deadline_error(f"fetching the card of {base.text}") from None
    return judge_card(base, card, found, now=now, expected_did=expected_did,
                      require_signed=require_signed, pins=pins, record_pin=record_pin,
                      trust=trust, fetched_from=result.url)


def _fetch_envelope(client: SafeClient, sig_url: str) -> EnvelopeResult:
    """The envelope as parsed JSON; ``None`` (with why) when there is none to judge.

    A 404, another status, or a body that is not JSON at all is *no envelope*: a server
    that controls the path could as well answer 404, so none of these can downgrade
    anything. Any JSON found is judged as an envelope, and refused if it fails.
    """
    from muretai_cli.seam import parse_document

    try:
        result = client.get(sig_url)
    except Refused as exc:
        if exc.code != "cross-origin-redirect":
            raise
        return EnvelopeResult.refused(error("envelope-redirected",
                                            f"the envelope was discarded: {exc.detail}"))
    if result.status != 200:
        return EnvelopeResult.unsigned(f"HTTP {result.status} at {sig_url}")
    try:
        return EnvelopeResult.signed(parse_document(result.body))
    except InputError:
        return EnvelopeResult.unsigned(f"{sig_url} served no JSON")
