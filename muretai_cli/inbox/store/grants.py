"""Contact grants and their redemptions: what opens a connection for a sender."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from muretai_cli.errors import InputError, Refused
from muretai_cli.inbox.store.base import StoreBase
from muretai_cli.inbox.store.uses import GRANT_USES, spend_use

__all__ = ["GrantRow", "Grants"]


@dataclass(frozen=True, slots=True)
class GrantRow:
    id: str
    doc: dict[str, Any]
    uses: int
    used: int
    iat: int
    exp: int
    purpose: str | None
    created: int
    revoked: int | None

    def state(self, now: int) -> str:
        if self.revoked is not None:
            return "revoked"
        if self.exp <= now:
            return "expired"
        if self.used >= self.uses:
            return "exhausted"
        return "usable"

    def to_json(self, now: int) -> dict[str, Any]:
        return {"id": self.id, "uses": self.uses, "used": self.used,
                "usesLeft": max(0, self.uses - self.used), "iat": self.iat, "exp": self.exp,
                "purpose": self.purpose, "revoked": self.revoked, "state": self.state(now)}



class Grants(StoreBase):
    """The ``grants``, ``redemptions`` and ``connections`` tables."""

    def add_grant(self, grant: dict[str, Any], now: int) -> None:
        with self.db.transaction() as tx:
            tx.execute(
                "INSERT INTO grants (id, doc, uses, iat, exp, purpose, created, seq) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM grants))",
                (grant["id"], json.dumps(grant, sort_keys=True), grant["uses"], grant["iat"],
                 grant["exp"], grant.get("purpose"), now))
            self._bump_card(tx)

    def _grant_of(self, row: tuple[Any, ...]) -> GrantRow:
        return GrantRow(row[0], json.loads(row[1]), row[2], row[3], row[4], row[5], row[6],
                        row[7], row[8])

    def grants(self) -> list[GrantRow]:
        rows = self.db.all("SELECT id, doc, uses, used, iat, exp, purpose, created, revoked "
                           "FROM grants ORDER BY created DESC, seq DESC")
        return [self._grant_of(r) for r in rows]

    def grant(self, grant_id: str) -> GrantRow | None:
        row = self.db.one("SELECT id, doc, uses, used, iat, exp, purpose, created, revoked "
                          "FROM grants WHERE id=?", (grant_id,))
        return self._grant_of(row) if row else None

    def card_grant(self, now: int) -> GrantRow | None:
        """The newest usable grant (not revoked, not expired, uses left), or None."""
        row = self.db.one(
            "SELECT id, doc, uses, used, iat, exp, purpose, created, revoked FROM grants "
            "WHERE revoked IS NULL AND exp > ? AND used < uses "
            "ORDER BY iat DESC, created DESC, seq DESC LIMIT 1", (now,))
        return self._grant_of(row) if row else None

    def revoke(self, grant_id: str, now: int) -> GrantRow:
        with self.db.transaction() as tx:
            changed = tx.execute("UPDATE grants SET revoked=? WHERE id=? AND revoked IS NULL",
                                 (now, grant_id)).rowcount
            if changed:
                self._bump_card(tx)
        row = self.grant(grant_id)
        if row is None:
            raise InputError("no-such-grant", f"no grant with id {grant_id!r}",
                             hint="list them with `muretai contact grants --as NAME`")
        return row

    def redeem(self, grant_id: str, sender: str, now: int) -> int:
        """Open a connection for ``sender`` under a grant; returns its expiry.

        One exclusive transaction: the use is counted, the connection opened, a rejection
        lifted, so N redemptions racing over any number of processes open at most ``uses``.
        The same sender redeeming the same grant again changes nothing. Raises ``Refused``
        (``unknown-grant``, ``revoked``, ``expired``, ``exhausted``, ``connection-dropped``).
        """
        with self.db.transaction() as tx:
            spent = spend_use(tx, GRANT_USES, grant_id, sender, now)
            exp = spent.exp
            if not spent.now:
                if not tx.one("SELECT 1 FROM connections WHERE grant_id=? AND sender=?",
                              (grant_id, sender)):
                    raise Refused("connection-dropped", "that connection was closed by the "
                                                        "owner; a new grant is needed")
                return int(exp)
            tx.execute("INSERT INTO connections (sender, grant_id, opened, expires) "
                       "VALUES (?, ?, ?, ?) ON CONFLICT (sender, grant_id) DO UPDATE SET "
                       "opened=excluded.opened, expires=excluded.expires",
                       (sender, grant_id, now, exp))
            tx.execute("DELETE FROM senders WHERE did=? AND status='rejected'", (sender,))
            if spent.left == 0:
                self._bump_card(tx)
            return int(exp)

