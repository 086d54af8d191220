"""Offline verdicts on single artifacts: a signed message, a signed card envelope.

These are what ``muretai verify`` runs, and what a CI job runs over a thousand files.
Each returns a ``Verdict`` whose reasons are named; none of them touches the network.
"""

from __future__ import annotations

from typing import Any

from muretai_cli.artifacts.message import envelope_of
from muretai_cli.errors import MuretaiError
from muretai_cli.seam import (
    ENVELOPE_MAX_AGE,
    ENVELOPE_MAX_AHEAD,
    MESSAGE_WINDOW,
    check_fresh,
    verify_card_envelope,
    verify_envelope,
)
from muretai_cli.urls import BaseUrl, same_base
from muretai_cli.verdict import Reason, Verdict, error, warning


def _failed(subject: str, exc: MuretaiError, facts: dict[str, Any] | None = None) -> Verdict:
    return Verdict.of(subject, [error(exc.code, exc.detail)], facts)


def check_message(doc: object, *, to_did: str, now: int,
                  window: int = MESSAGE_WINDOW) -> Verdict:
    """A ``message/send`` request or bare A2A message, signed for ``to_did``, fresh at ``now``."""
    try:
        env = envelope_of(doc)
        fields = verify_envelope(env, to_did=to_did)
    except MuretaiError as exc:
        return _failed("message", exc)
    facts = {"from": fields["from"], "to": fields["to"], "messageId": fields["messageId"],
             "contextId": fields["contextId"], "timestamp": fields["timestamp"],
             "text": fields["text"]}
    try:
        check_fresh(fields["timestamp"], now, window)
    except MuretaiError as exc:
        return _failed("message", exc, facts)
    return Verdict.of("message", [], facts)


def card_freshness(ts: int, now: int) -> list[Reason]:
    """The one rule for a card envelope's age, wherever a card is judged (verify card, card
    fetch, handoff check): dated more than ENVELOPE_MAX_AHEAD ahead is refused
    (``envelope-from-the-future``); older than ENVELOPE_MAX_AGE is ``stale-envelope``, a
    warning (the signature still holds, the card may be out of date)."""
    if ts - now > ENVELOPE_MAX_AHEAD:
        return [error("envelope-from-the-future", f"the envelope is dated {ts - now} s ahead "
                                                  f"(more than {ENVELOPE_MAX_AHEAD} s)")]
    if now - ts > ENVELOPE_MAX_AGE:
        return [warning("stale-envelope", f"the envelope was signed {now - ts} s ago "
                                          f"(more than {ENVELOPE_MAX_AGE // 3600} h)")]
    return []


def check_card_envelope(doc: object, *, did: str, now: int,
                        origin: BaseUrl | None = None) -> Verdict:
    """A signed card envelope under the DID the caller expects, optionally for a base URL."""
    try:
        card = verify_card_envelope(doc, expected_did=did)
    except MuretaiError as exc:
        return _failed("card", exc)
    assert isinstance(doc, dict)
    reasons = card_freshness(doc["ts"], now)
    if origin is not None and not same_base(str(card.get("url", "")), origin):
        reasons.append(error("wrong-origin", f"the card's url {str(card.get('url'))[:200]!r} "
                                             f"does not name {origin.text}"))
    return Verdict.of("card", reasons, {"did": card["did"], "ts": doc["ts"],
                                        "url": card.get("url"), "name": card.get("name")})
