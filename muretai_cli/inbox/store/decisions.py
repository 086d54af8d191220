"""The owner's decisions: held first contacts (``requests``), the sender lists
(``senders``) and the owner's log (``decisions``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import InputError, Refused
from muretai_cli.inbox.store.base import StoreBase
from muretai_cli.inbox.store.timeline import wba_of

if TYPE_CHECKING:
    from muretai_cli.db import Tx

__all__ = ["Decisions", "SenderStatus", "SenderView"]

SenderStatus = Literal["allowed", "blocked", "approved", "rejected"]


@dataclass(frozen=True, slots=True)
class SenderView:
    """What policy needs to know about a sender, read in one place."""

    status: str | None
    valid_connection: bool
    any_connection: bool
    held_request: str | None



class Decisions(StoreBase):
    """The ``requests``, ``senders`` and ``decisions`` tables."""

    def sender_status(self, did: str) -> str | None:
        row = self.db.one("SELECT status FROM senders WHERE did=?", (did,))
        return str(row[0]) if row else None

    def sender_view(self, did: str, now: int, status: str | None) -> SenderView:
        with self.db.transaction(exclusive=False) as tx:
            rows = tx.all("SELECT c.expires, g.revoked FROM connections c LEFT JOIN grants g "
                          "ON g.id = c.grant_id WHERE c.sender=?", (did,))
            held = tx.one("SELECT id FROM requests WHERE sender=? AND status='held' LIMIT 1",
                          (did,))
        valid = any(exp > now and revoked is None for exp, revoked in rows)
        return SenderView(status, valid, bool(rows), str(held[0]) if held else None)


    def request_list(self, *, all_: bool = False) -> list[dict[str, Any]]:
        """One entry per request (a stranger awaiting a decision, or one decision with
        ``all_``), oldest first, whatever the stranger sent: its first message's fields and
        id, and ``messages``, every message kept under it (what approving delivers)."""
        grouped: dict[tuple[Any, ...], dict[str, Any]] = {}
        for row in self.requests(all_=all_):
            key = (row["from"], row["status"], row["decided"])
            entry = grouped.setdefault(key, {**row, "messages": []})
            entry["vouch"] = entry["vouch"] or row["vouch"]
            entry["messages"].append({k: row[k] for k in (
                "messageId", "contextId", "text", "timestamp", "received", "damaged")})
            entry["damaged"] = entry["damaged"] or row["damaged"]
        return list(grouped.values())

    def requests(self, *, all_: bool = False) -> list[dict[str, Any]]:
        """Every message held (or, with ``all_``, decided), each its own row, oldest first."""
        rows = self.db.all(
            "SELECT r.id, r.sender, r.message_id, r.context_id, r.text, r.sent, r.received, "
            "r.status, r.decided, r.wba, v.vouch FROM requests r LEFT JOIN held_vouches v ON "
            "v.request_id = r.id WHERE r.status='held' OR ?=1 ORDER BY r.received, r.seq",
            (int(all_),))
        keys = ("id", "from", "messageId", "contextId", "text", "timestamp", "received",
                "status", "decided", "wba", "vouch")
        from muretai_cli.db import damaged

        out = [{**dict(zip(keys, r, strict=True)), "damaged": damaged(r)} for r in rows]
        for item in out:
            item["wba"] = wba_of(item["wba"])
            item["vouch"] = wba_of(item["vouch"])  # the same: stored JSON, or None
        return out

    def _held(self, tx: Tx, request_id: str) -> tuple[Any, ...]:
        row = tx.one("SELECT id, sender, message_id, context_id, text, sent, received, sig, "
                     "status FROM requests WHERE id=?", (request_id,))
        if row is None:
            raise InputError("no-such-request", f"no held request with id {request_id!r}",
                             hint="list them with `muretai op --as NAME requests list`")
        if row[8] != "held":
            raise InputError("already-decided", f"request {request_id} was already {row[8]}")
        return tuple(row)

    def admit_joiner(self, tx: Tx, did: str, now: int) -> None:
        """Inside the transaction that spends an invite's use (``InviteStore.redeem``): a
        sender the owner blocked stays blocked (``Refused`` ``blocked``, which rolls the spend
        back); anyone else becomes an allowed sender, unless already allowed or approved."""
        status = self._status(tx, did)
        if status == "blocked":
            raise Refused("blocked", "the owner blocked this sender")
        if status not in ("allowed", "approved"):
            self._set_sender(tx, did, "allowed", now)
            self._log(tx, now, "allow", did)

    def _set_sender(self, tx: Tx, did: str, status: str, now: int) -> None:
        tx.execute("INSERT INTO senders (did, status, since) VALUES (?, ?, ?) "
                   "ON CONFLICT (did) DO UPDATE SET status=excluded.status, "
                   "since=excluded.since", (did, status, now))

    def _status(self, tx: Tx, did: str) -> str | None:
        row = tx.one("SELECT status FROM senders WHERE did=?", (did,))
        return str(row[0]) if row else None

    def _log(self, tx: Tx, now: int, action: str, sender: str,
             request_id: str | None = None) -> None:
        tx.execute("INSERT INTO decisions (at, action, sender, request_id) VALUES (?, ?, ?, ?)",
                   (now, action, sender, request_id))

    def approve(self, request_id: str, now: int) -> dict[str, Any]:
        """Deliver the held message, and every other one its sender sent while held."""
        with self.db.transaction() as tx:
            rid, sender, *_ = self._held(tx, request_id)
            rows = tx.all("SELECT message_id, context_id, text, sent, received, sig, channel, "
                          "reply_to, relay, wba FROM requests WHERE sender=? AND "
                          "status='held' ORDER BY received, seq", (sender,))
            tx.execute("UPDATE requests SET status='approved', decided=? WHERE sender=? AND "
                       "status='held'", (now, sender))
            for mid, ctx, text, sent, received, sig, channel, reply_to, relay, wba in rows:
                tx.execute("INSERT INTO inbox (sender, message_id, context_id, text, sent, "
                           "received, verified, sig, via, channel, reply_to, relay, wba) "
                           "VALUES (?, ?, ?, ?, ?, ?, 1, ?, 'approved', ?, ?, ?, ?) "
                           "ON CONFLICT (sender, message_id) DO NOTHING",
                           (sender, mid, ctx, text, sent, received, sig, channel, reply_to,
                            relay, wba))
            if self._status(tx, sender) not in ("allowed", "blocked"):
                self._set_sender(tx, sender, "approved", now)
            self._log(tx, now, "approve", sender, rid)
        return {"id": rid, "from": sender, "decided": now, "status": "approved"}

    def reject(self, request_id: str, now: int, *, block: bool = False) -> dict[str, Any]:
        with self.db.transaction() as tx:
            rid, sender, *_ = self._held(tx, request_id)
            tx.execute("UPDATE requests SET status='rejected', decided=? WHERE sender=? AND "
                       "status='held'", (now, sender))
            tx.execute("DELETE FROM connections WHERE sender=?", (sender,))
            if block:
                self._set_sender(tx, sender, "blocked", now)
            elif self._status(tx, sender) != "blocked":
                self._set_sender(tx, sender, "rejected", now)
            self._log(tx, now, "reject+block" if block else "reject", sender, rid)
        return {"id": rid, "from": sender, "decided": now,
                "status": "rejected", "blocked": block}

    def senders(self) -> list[dict[str, Any]]:
        rows = self.db.all("SELECT did, status, since FROM senders ORDER BY since, did")
        return [{"did": d, "status": s, "since": t} for d, s, t in rows]

    def set_sender(self, did: str, status: SenderStatus | None, now: int) -> None:
        """allow / block, or ``None`` to unblock (drop any entry for that sender)."""
        with self.db.transaction() as tx:
            if status is None:
                tx.execute("DELETE FROM senders WHERE did=?", (did,))
                self._log(tx, now, "unblock", did)
            else:
                self._set_sender(tx, did, status, now)
                self._log(tx, now, {"allowed": "allow", "blocked": "block"}.get(status, status),
                          did)

    def decisions(self) -> list[dict[str, Any]]:
        rows = self.db.all("SELECT at, action, sender, request_id FROM decisions ORDER BY id")
        return [{"at": a, "action": b, "sender": c, "requestId": d} for a, b, c, d in rows]
