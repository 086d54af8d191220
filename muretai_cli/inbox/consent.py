"""Consent: what the owner's rules make of a verified signed message, whatever carried it.

The door and a relay drain call ``admit`` (or ``judge``) with a verified ``Arrival`` and the
sender's status, read in the same lookup as the replay check. It commits (inbox or held
request) and returns what was done, or raises the policy's refusal as an ``RpcError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import Refused
from muretai_cli.inbox.ladder import Code, RpcError

if TYPE_CHECKING:
    from muretai_cli.inbox.arrival import Arrival
    from muretai_cli.inbox.store import IdentityStore

Policy = Literal["open", "quarantine", "closed"]
POLICIES: tuple[Policy, ...] = ("open", "quarantine", "closed")
HELD_CODE = Code.AWAITING_APPROVAL  # a first contact held for the owner's approval
POLICY_KEY = "policy"  # the store setting that holds the identity's policy
DEFAULT_POLICY: Policy = "quarantine"


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


def admit(store: IdentityStore, policy: Policy, arrival: Arrival, status: str | None,
          now: int, *, gate: Callable[[str], dict[str, Any]]) -> str:
    """Decide and commit: returns what was done, or raises the policy's refusal.

    ``gate(request_id)`` builds the data of the awaiting-approval answer for a held message.
    """
    judge(store, policy, arrival, status, now, gate=gate)
    if not store.accept(arrival, now):
        raise RpcError(Code.REPLAY_OR_STALE, "replay")
    return "accepted"


def consults_store(policy: Policy, status: str | None) -> bool:
    """Whether ``judge`` reads (or, holding, writes) the store for a sender of ``status``;
    when not, it decides from the policy and the status alone."""
    return policy != "open" and status not in ("allowed", "blocked", "rejected")


def judge(store: IdentityStore, policy: Policy, arrival: Arrival, status: str | None,
          now: int, *, gate: Callable[[str], dict[str, Any]]) -> None:
    """The policy's verdict before the commit: returns when the message is to be accepted
    (``store.accept``, by the caller), raises the refusal otherwise, or holds the message
    (a first contact in quarantine) and raises the awaiting-approval answer."""
    sender = arrival.sender
    if status == "blocked":
        raise RpcError(Code.INTRODUCTION_REQUIRED, "blocked")
    if policy != "open" and status != "allowed":
        if status == "rejected":
            raise RpcError(Code.INTRODUCTION_REQUIRED, "rejected")
        view = store.sender_view(sender, now, status)
        if view.any_connection and not view.valid_connection:
            raise RpcError(Code.GRANT_REFUSED, "grant-no-longer-valid")
        # A peer this identity wrote to first is not a stranger (a redeemed grant lets a
        # sender through a closed door, but is no approval in quarantine).
        wrote = store.wrote_to(sender)
        if policy == "closed" and not (view.valid_connection or wrote):
            raise RpcError(Code.INTRODUCTION_REQUIRED, "introduction-required")
        if policy == "quarantine" and not (status == "approved" or wrote):
            # Held, each message (none dropped); the answer names the first held request.
            try:
                request_id = store.hold(arrival, now)
            except Refused as full:  # every stranger's holds at their bound
                raise RpcError(Code.INTRODUCTION_REQUIRED, full.code) from None
            if request_id is None:
                raise RpcError(Code.REPLAY_OR_STALE, "replay")
            raise RpcError(HELD_CODE, "awaiting-approval", data=gate(request_id))
