"""Consent: what the owner's rules make of a verified signed message, whatever carried it.

The door and a relay drain call ``admit`` (or ``judge``) with a verified ``Arrival`` and the
sender's status, read in the same lookup as the replay check. It commits (inbox or held
request) and returns what was done, or raises the policy's refusal as an ``RpcError``.

The trust gate is here too, once for every way in (``docs/trust.md``, "The gate"): a first
contact's introduction (``Arrival.vc``) verified for (sender, me), then judged by its
issuer (one of my contacts: admitted as introduced; anyone else: held, or refused
``ISSUER_NOT_TRUSTED`` where it cannot be held) and by the owner's review of its proposal
(``VouchBook.proposal``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.inbox.ladder import Code, RpcError
from muretai_cli.inbox.vouches import NO_VOUCH_BOOK, VouchBook

if TYPE_CHECKING:
    from muretai_cli.artifacts.introduction import Introduction
    from muretai_cli.inbox.arrival import Arrival
    from muretai_cli.inbox.store import IdentityStore

Policy = Literal["open", "quarantine", "closed", "introduced"]
POLICIES: tuple[Policy, ...] = ("open", "quarantine", "closed", "introduced")
HELD_CODE = Code.AWAITING_APPROVAL  # a first contact held for the owner's approval
POLICY_KEY = "policy"  # the store setting that holds the identity's policy
DEFAULT_POLICY: Policy = "quarantine"
# What a stranger refused under ``introduced`` is told to do (in the refusal's data).
INTRODUCTION_REMEDY = ("ask someone this identity knows to introduce you: "
                       "`muretai op --as YOU intro ask INTRODUCER --to {me}`, then send "
                       "again once they vouched (the introduction rides your first message)")

Verdict = Literal["introduced", "not-a-contact", "pending"]


def policy_of(store: IdentityStore) -> Policy:
    """The identity's consent policy, as stored (`op policy`): the door's default and
    turn-check's rule alike; ``quarantine`` unless set."""
    value = store.setting(POLICY_KEY)
    for policy in POLICIES:
        if value == policy:
            return policy
    return DEFAULT_POLICY


def set_policy(store: IdentityStore, policy: Policy) -> None:
    """Record the identity's consent policy in its store."""
    store.set_setting(POLICY_KEY, policy)


def is_contact(store: IdentityStore, did: str, now: int) -> bool:
    """Whether ``did`` is one of this identity's contacts, whose vouch opens the door: an
    allowed or approved sender, a sender with a valid connection (a redeemed grant), a
    contact an invite made, or a peer this identity wrote to first. The one place the gate
    asks; a blocked DID is never a contact."""
    return _is_contact(store, did, now, store.sender_status(did))


def _is_contact(store: IdentityStore, did: str, now: int, status: str | None) -> bool:
    """``is_contact`` for a DID whose sender ``status`` the caller has just read (the gate
    reads an issuer's once, for the block check and this alike)."""
    from muretai_cli.inbox.invites import InviteStore

    if status == "blocked":
        return False
    if status in ("allowed", "approved") or store.wrote_to(did):
        return True
    if store.sender_view(did, now, status).valid_connection:
        return True
    if store.book_row(did) is not None:  # the contact book: an invite, a reach, a name
        return True
    return InviteStore(store.db).contact(did) is not None


def contact_name(store: IdentityStore, did: str) -> str | None:
    """The name the owner gave ``did`` in the contact book (``op contact name``), or None:
    never the name a peer gave itself."""
    row = store.book_row(did)
    return row.name if row is not None else None


@dataclass(frozen=True, slots=True)
class Vouch:
    """A first contact's introduction, verified, and what the gate made of it."""

    intro: Introduction
    verdict: Verdict

    def to_json(self, store: IdentityStore) -> dict[str, Any]:
        return {"verdict": self.verdict, **self.intro.facts(),
                "issuerName": contact_name(store, self.intro.issuer)}


def admit(store: IdentityStore, policy: Policy, arrival: Arrival, status: str | None,
          now: int, *, gate: Callable[[str], dict[str, Any]],
          book: VouchBook = NO_VOUCH_BOOK) -> str:
    """Decide and commit: returns what was done, or raises the policy's refusal.

    ``gate(request_id)`` builds the data of the awaiting-approval answer for a held message.
    """
    if not store.accept(judge(store, policy, arrival, status, now, gate=gate, book=book),
                        now):
        raise RpcError(Code.REPLAY_OR_STALE, "replay")
    return "accepted"


def consults_store(policy: Policy, status: str | None, arrival: Arrival | None = None) -> bool:
    """Whether ``judge`` reads (or, holding, writes) the store for a sender of ``status``;
    when not, it decides from the policy and the status alone. A message carrying a
    credential (an introduction, a gift) always does, unless its sender is blocked."""
    if arrival is not None and (arrival.vc is not None or arrival.held_vc is not None):
        return status != "blocked"
    return policy != "open" and status not in ("allowed", "blocked", "rejected")


def judge(store: IdentityStore, policy: Policy, arrival: Arrival, status: str | None,
          now: int, *, gate: Callable[[str], dict[str, Any]],
          book: VouchBook = NO_VOUCH_BOOK) -> Arrival:
    """The policy's verdict before the commit: returns the message to accept
    (``store.accept``, by the caller: ``arrival``, or, admitted on an introduction, it with
    ``introduced`` set, which the accept records in its own transaction), raises the refusal
    otherwise, or holds the message (a first contact in quarantine, or one vouched for by a
    stranger) and raises the awaiting-approval answer. ``book`` answers for revocations and
    proposals."""
    if status == "blocked":  # whatever it carries: a credential never overrides a block
        raise RpcError(Code.INTRODUCTION_REQUIRED, "blocked")
    if policy != "open" and status == "rejected":
        raise RpcError(Code.INTRODUCTION_REQUIRED, "rejected")
    admitted = arrival
    if _stranger(store, policy, arrival, status, now):
        vouch = _vouch(store, arrival, now, book) if arrival.vc is not None else None
        if vouch is None:
            _no_vouch(store, policy, arrival, now, gate)
        elif vouch.verdict == "introduced":
            admitted = replace(arrival, introduced=vouch.intro)
        elif policy != "open":
            _hold_vouched(store, policy, arrival, vouch, now, gate)
    if arrival.held_vc is not None:
        keep_gift(store, arrival, now, book)
    return admitted


def _stranger(store: IdentityStore, policy: Policy, arrival: Arrival, status: str | None,
              now: int) -> bool:
    """Whether the sender is a stranger to this policy (what it lets through without a
    vouch: ``allowed`` always; ``closed``: a valid connection, or a peer written to first;
    ``quarantine``: approved, or written to; ``introduced``: any of those)."""
    if status == "allowed":
        return False
    if policy == "open" and arrival.vc is None:
        return False
    view = store.sender_view(arrival.sender, now, status)
    if policy != "open" and view.any_connection and not view.valid_connection:
        raise RpcError(Code.GRANT_REFUSED, "grant-no-longer-valid")
    # A peer this identity wrote to first is not a stranger (a redeemed grant lets a
    # sender through a closed door, but is no approval in quarantine).
    if store.wrote_to(arrival.sender):
        return False
    if policy == "closed":
        return not view.valid_connection
    if policy == "quarantine":
        return status != "approved"
    return not (status == "approved" or view.valid_connection)


def _no_vouch(store: IdentityStore, policy: Policy, arrival: Arrival, now: int,
              gate: Callable[[str], dict[str, Any]]) -> None:
    if policy == "closed":
        raise RpcError(Code.INTRODUCTION_REQUIRED, "introduction-required")
    if policy == "introduced":
        raise RpcError(Code.INTRODUCTION_REQUIRED, "introduction-required", data={
            "reason": "introduction-required",
            "remedy": INTRODUCTION_REMEDY.format(me=arrival.to)})
    if policy == "quarantine":
        _hold(store, arrival, now, gate, None, Code.INTRODUCTION_REQUIRED)


def _hold_vouched(store: IdentityStore, policy: Policy, arrival: Arrival, vouch: Vouch,
                  now: int, gate: Callable[[str], dict[str, Any]]) -> None:
    """A vouch that does not open the door by itself: held with it, for the owner (or,
    where nothing is held, refused with the vouch's own code)."""
    code = Code.AWAITING_APPROVAL if vouch.verdict == "pending" else Code.ISSUER_NOT_TRUSTED
    reason = "proposal-pending" if vouch.verdict == "pending" else "issuer-not-trusted"
    if policy == "closed":
        raise RpcError(code, reason)
    _hold(store, arrival, now, gate, json.dumps(vouch.to_json(store), ensure_ascii=False),
          code, reason=reason)


def _hold(store: IdentityStore, arrival: Arrival, now: int,
          gate: Callable[[str], dict[str, Any]], vouch: str | None, full_code: Code, *,
          reason: str | None = None) -> None:
    """Held, each message (none dropped); the answer names the first held request."""
    try:
        request_id = store.hold(arrival, now, vouch=vouch)
    except Refused as full:  # every stranger's holds at their bound
        raise RpcError(full_code, reason or full.code) from None
    if request_id is None:
        raise RpcError(Code.REPLAY_OR_STALE, "replay")
    raise RpcError(HELD_CODE, "awaiting-approval", data=gate(request_id))


def _vouch(store: IdentityStore, arrival: Arrival, now: int, book: VouchBook) -> Vouch:
    """The introduction a first contact carries, verified for (sender, me) at ``now`` and
    unrevoked, and the gate's verdict on it; ``INTRODUCTION_INVALID`` (broken, retargeted,
    expired, replayed, revoked, declined) or ``ISSUER_NOT_TRUSTED`` (a blocked issuer)."""
    cid = arrival.vc.get("id") if isinstance(arrival.vc, dict) else None
    # The owner's review of its proposal, read first: a credential that verified when it
    # was proposed here, carried again byte for byte, is not solved twice (``verified``).
    review, digest = book.review(cid) if isinstance(cid, str) else (None, None)
    intro = verified(arrival.vc, subject=arrival.sender, recipient=arrival.to, now=now,
                     book=book, digest=digest)
    issuer_status = store.sender_status(intro.issuer)
    if issuer_status == "blocked":
        raise RpcError(Code.ISSUER_NOT_TRUSTED, "issuer-blocked")
    if review == "declined":
        raise RpcError(Code.INTRODUCTION_INVALID, "introduction-declined")
    # A contact's vouch opens the door by itself: a proposal of it still pending review holds
    # only what a stranger vouches for (the owner reviews the issuer along with the vouch).
    if review == "approved" or _is_contact(store, intro.issuer, now, issuer_status):
        return Vouch(intro, "introduced")
    if review == "pending":
        return Vouch(intro, "pending")
    return Vouch(intro, "not-a-contact")


def verified(credential: object, *, subject: str, recipient: str, now: int,
             book: VouchBook, digest: str | None = None) -> Introduction:
    """``verify_introduction`` with ``book``'s revocations, its refusal as
    ``INTRODUCTION_INVALID`` named ``introduction-<reason>`` (``introduction-expired``,
    ``introduction-wrong-recipient``…). ``digest``: the ``signed_digest`` of this
    credential id as it verified before here (its proposal)."""
    from muretai_cli.artifacts.introduction import verify_introduction

    doc = credential if isinstance(credential, dict) else {}
    issuer = doc.get("issuer")
    endpoint = doc.get("issuerEndpoint")

    def revoked(cid: str) -> bool:
        return isinstance(issuer, str) and book.revoked(
            issuer, cid, endpoint if isinstance(endpoint, str) else None)

    try:
        return verify_introduction(credential, subject=subject, recipient=recipient, now=now,
                                   revoked=revoked, verified=digest)
    except MuretaiError as exc:
        raise RpcError(Code.INTRODUCTION_INVALID, f"introduction-{exc.code}",
                       detail=f"the introduction is refused: {exc.detail[:200]}") from None


def keep_gift(store: IdentityStore, arrival: Arrival, now: int,
              book: VouchBook = NO_VOUCH_BOOK) -> bool:
    """Keep a credential gifted to me (``metadata.held_vc``): one its sender issued, whose
    subject is me, valid now. Anything else is dropped without a word (a gift refuses no
    message). Returns whether it was kept."""
    gift = arrival.held_vc
    claims = gift.get("credentialSubject") if gift is not None else None
    target = claims.get("introducedTo") if isinstance(claims, dict) else None
    if gift is None or gift.get("issuer") != arrival.sender or not isinstance(target, str):
        return False
    try:
        intro = verified(gift, subject=arrival.to, recipient=target, now=now, book=book)
    except RpcError:
        return False
    store.keep_held(intro, arrival.held_reach, now)
    return True
