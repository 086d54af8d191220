"""Counted, expiring, revocable tokens: one spend rule for grants and invites alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from muretai_cli.errors import Refused

if TYPE_CHECKING:
    from muretai_cli.db import Tx

__all__ = ["GRANT_USES", "Spent", "Uses", "spend_use"]


@dataclass(frozen=True)
class Uses:
    """A kind of counted, expiring, revocable token, as four statements: ``read`` its
    ``uses, used, exp, revoked`` by key; ``claimed``: has this claimant spent one (key,
    who); ``count`` one more use (key); ``claim`` record the claimant (key, who, at). And
    the refusal ``(code, message)`` for each way a spend fails: ``unknown``, ``revoked``,
    ``expired``, ``used-up``."""

    read: str
    claimed: str
    count: str
    claim: str
    refusals: dict[str, tuple[str, str]]


@dataclass(frozen=True)
class Spent:
    now: bool  # a use was spent by this call (False: ``who`` had spent one already)
    left: int  # uses left after it
    exp: int


def spend_use(tx: Tx, kind: Uses, key: str, who: str, now: int,
              valid_at: int | None = None) -> Spent:
    """Spend one use of token ``key`` for ``who`` inside ``tx`` (an exclusive transaction,
    so racing spends over any number of processes never exceed ``uses``). Spending again
    for the same ``who`` spends nothing. ``Refused`` with ``kind``'s codes otherwise.
    ``valid_at``: the moment the token must have been unexpired at (a relayed claim: when
    the relay took it); ``now`` when None."""
    row = tx.one(kind.read, (key,))
    if row is None:
        raise Refused(*kind.refusals["unknown"])
    uses, used, exp, revoked = row
    if revoked is not None:
        raise Refused(*kind.refusals["revoked"])
    if exp <= (now if valid_at is None else valid_at):
        raise Refused(*kind.refusals["expired"])
    if tx.one(kind.claimed, (key, who)):
        return Spent(False, max(0, uses - used), int(exp))
    if used >= uses:
        raise Refused(*kind.refusals["used-up"])
    tx.execute(kind.count, (key,))
    tx.execute(kind.claim, (key, who, now))
    return Spent(True, uses - used - 1, int(exp))


GRANT_USES = Uses(
    "SELECT uses, used, exp, revoked FROM grants WHERE id=?",
    "SELECT 1 FROM redemptions WHERE grant_id=? AND sender=?",
    "UPDATE grants SET used=used+1 WHERE id=?",
    "INSERT INTO redemptions (grant_id, sender, at) VALUES (?, ?, ?)", {
    "unknown": ("unknown-grant", "this door has no record of that grant"),
    "revoked": ("revoked", "the grant was revoked"),
    "expired": ("expired", "the grant has expired"),
    "used-up": ("exhausted", "the grant has no uses left")})
