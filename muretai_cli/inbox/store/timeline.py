"""What this identity sent and received, as people read it: the inbox, what was sent and
how it went, where peers are, and the conversation view over both directions."""

from __future__ import annotations

import json
from typing import Any, Literal

from muretai_cli.inbox.store.base import StoreBase

__all__ = ["SentState", "Timeline", "wba_of"]

SentState = Literal["delivered", "queued", "held", "refused"]


def wba_of(text: str | None) -> dict[str, Any] | None:
    """The stored Web Bot Auth verdict of a received message (None: the request had none)."""
    if text is None:
        return None
    doc: dict[str, Any] = json.loads(text)
    return doc


class Timeline(StoreBase):
    """The ``inbox`` (as read), ``sent`` and ``peers`` tables."""

    def inbox(self, limit: int | None = 20) -> list[dict[str, Any]]:
        """Newest into the inbox first. ``received`` is when the door took the message in
        (for an approved first contact, when it was held); ``approved`` when you approved it.
        ``damaged``: a value of the row was not UTF-8 on disk (shown with U+FFFD)."""
        sql = ("SELECT * FROM (SELECT i.id, i.sender, i.message_id, i.context_id, i.text, "
               "i.sent, i.received, i.verified, i.via, (SELECT MIN(r.decided) FROM requests r "
               "WHERE i.via='approved' AND r.sender=i.sender AND r.message_id=i.message_id "
               "AND r.status='approved') AS approved, i.wba FROM inbox i) q "
               "ORDER BY COALESCE(approved, received) DESC, id DESC")
        rows = self.db.all(sql + " LIMIT ?", (limit,)) if limit else self.db.all(sql)
        keys = ("id", "from", "messageId", "contextId", "text", "timestamp", "received",
                "verified", "via", "approved", "wba")
        from muretai_cli.db import damaged

        out = [{**dict(zip(keys, r, strict=True)), "damaged": damaged(r)} for r in rows]
        for item in out:
            item["verified"] = bool(item["verified"])
            item["wba"] = wba_of(item["wba"])
        return out


    def latest_seq(self) -> int:
        """The highest ``seq`` the inbox holds (0: none yet)."""
        row = self.db.one("SELECT COALESCE(MAX(id), 0) FROM inbox")
        return int(row[0]) if row else 0

    def inbox_after(self, after: int, upto: int, *, peer: str | None = None,
                    context: str | None = None, reply_to: str | None = None,
                    limit: int = 50) -> list[dict[str, Any]]:
        """Received messages with ``after`` < ``seq`` <= ``upto``, oldest first, at most
        ``limit``, filtered by sender, contextId and replyTo (None: any). A read: nothing
        moves. Each filter given is an index's leading column (schema version 9)."""
        where, params = ["id > ?", "id <= ?"], list[object]([after, upto])
        for column, value in (("sender", peer), ("context_id", context),
                              ("reply_to", reply_to)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        # Only fixed fragments are joined (the values are parameters): one statement per set
        # of filters, so the planner picks that filter's index (``? IS NULL OR`` defeats it).
        sql = ("SELECT id, sender, message_id, context_id, reply_to, text, sent, received, "  # noqa: S608
               "verified, channel, via, wba FROM inbox WHERE " + " AND ".join(where)
               + " ORDER BY id LIMIT ?")
        rows = self.db.all(sql, (*params, limit))
        keys = ("seq", "from", "messageId", "contextId", "replyTo", "text", "timestamp",
                "received", "verified", "channel", "via", "wba")
        from muretai_cli.db import damaged

        out = [{**dict(zip(keys, r, strict=True)), "damaged": damaged(r)} for r in rows]
        for item in out:
            item["verified"] = bool(item["verified"])
            item["wba"] = wba_of(item["wba"])
        return out

    def record_sent(self, *, peer: str, message: dict[str, Any], channel: str,
                    state: SentState, now: int, address: str | None = None,
                    reply_to: str | None = None, request_id: str | None = None) -> None:
        """What this identity sent (six fields of ``message``), where, and how it went."""
        with self.db.transaction(exclusive=False) as tx:
            tx.execute(
                "INSERT INTO sent (peer, message_id, context_id, text, sent, channel, state, "
                "reply_to, request_id, address) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (message_id) DO UPDATE SET state=excluded.state, "
                "request_id=excluded.request_id",
                (peer, message["messageId"], message["contextId"], message["text"],
                 message["timestamp"], channel, state, reply_to, request_id, address))
            if state == "delivered":  # the door let this one in: what it held, it delivered
                tx.execute("UPDATE sent SET state='delivered' WHERE peer=? AND state='held'",
                           (peer,))

    def sent_message(self, message_id: str) -> dict[str, Any] | None:
        row = self.db.one("SELECT peer, message_id, context_id, text, sent, channel, state, "
                              "reply_to, request_id FROM sent WHERE message_id=?",
                              (message_id,))
        keys = ("to", "messageId", "contextId", "text", "timestamp", "channel", "state",
                "replyTo", "requestId")
        return dict(zip(keys, row, strict=True)) if row else None

    def pending_held(self, peer: str, text: str) -> dict[str, Any] | None:
        """A message to ``peer`` with this text still held at the peer's door, if any."""
        row = self.db.one("SELECT message_id FROM sent WHERE peer=? AND state='held' AND "
                              "text=? ORDER BY sent, id LIMIT 1", (peer, text))
        return self.sent_message(str(row[0])) if row else None

    def wrote_to(self, did: str) -> bool:
        """Whether this identity wrote to ``did`` first: such a peer is not a stranger."""
        row = self.db.one("SELECT 1 FROM sent WHERE peer=? AND state != 'refused' LIMIT 1",
                              (did,))
        return row is not None

    def peer_relay(self, did: str) -> str | None:
        row = self.db.one("SELECT relay FROM peers WHERE did=?", (did,))
        return str(row[0]) if row and row[0] else None

    def received(self, sender: str, message_id: str) -> dict[str, Any] | None:
        """A message from ``sender`` in the inbox or held, by its messageId."""
        row = self.db.one(
            "SELECT message_id, context_id, text, sent, received, channel, reply_to FROM inbox "
            "WHERE sender=? AND message_id=? UNION ALL SELECT message_id, context_id, text, "
            "sent, received, channel, reply_to FROM requests WHERE sender=? AND message_id=? "
            "LIMIT 1", (sender, message_id, sender, message_id))
        if row is None:
            return None
        keys = ("messageId", "contextId", "text", "timestamp", "received", "channel", "replyTo")
        return {"from": sender, **dict(zip(keys, row, strict=True))}


    def received_by_id(self, message_id: str) -> dict[str, Any] | None:
        row = self.db.one("SELECT sender FROM inbox WHERE message_id=? UNION ALL "
                              "SELECT sender FROM requests WHERE message_id=? LIMIT 1",
                              (message_id, message_id))
        return self.received(str(row[0]), message_id) if row else None


    def conversation(self, *, peer: str | None = None, context: str | None = None
                     ) -> list[dict[str, Any]]:
        """Both directions, sent and received: grouped by conversation (the one with the
        latest message last), oldest first within each."""
        items = self._timeline(peer, context)
        last: dict[Any, int] = {}
        for index, item in enumerate(items):
            last[(item["peer"], item["contextId"])] = index
        items.sort(key=lambda m: (last[(m["peer"], m["contextId"])], m["received"]))
        return items

    def _timeline(self, peer: str | None, context: str | None) -> list[dict[str, Any]]:
        """Every message either way (filtered), oldest first: by the second it was sent or
        received, and within one second by its depth in its reply chain."""
        # A filter left out is NULL, which matches everything (one fixed statement).
        rows = self.db.all(
            "SELECT * FROM (SELECT 'in' AS direction, i.sender AS peer, i.message_id, "
            "i.context_id, i.text, i.sent, i.received AS at, i.verified, i.channel, i.reply_to, "
            "NULL AS state, (SELECT MIN(r.decided) FROM requests r WHERE i.via='approved' AND "
            "r.sender=i.sender AND r.message_id=i.message_id AND r.status='approved') AS "
            "approved, i.wba, i.id FROM inbox i UNION ALL SELECT 'out', peer, message_id, "
            "context_id, text, sent, sent, 1, channel, reply_to, state, NULL, NULL, id FROM "
            "sent) AS m "
            "WHERE (CAST(? AS TEXT) IS NULL OR peer=?) AND (CAST(? AS TEXT) IS NULL OR "
            "context_id=?) "
            "ORDER BY at, direction, id", (peer, peer, context, context))
        keys = ("direction", "peer", "messageId", "contextId", "text", "timestamp",
                "received", "verified", "channel", "replyTo", "state", "approved", "wba")
        from muretai_cli.db import damaged

        items = [{**dict(zip(keys, r[:13], strict=True)), "damaged": damaged(r)} for r in rows]
        # Timestamps are whole seconds: a reply received in the second its parent was sent
        # must still come after it. A message's depth in its reply chain breaks such ties.
        parent = {m["messageId"]: m["replyTo"] for m in items}
        depth: dict[str, int] = {}
        for item in items:
            item["verified"] = bool(item["verified"])
            item["wba"] = wba_of(item["wba"])
            chain: list[str] = []
            cur = item["messageId"]
            while cur in parent and cur not in depth and cur not in chain:
                chain.append(cur)
                cur = parent[cur]
            base = depth.get(cur, -1) if cur in parent else -1
            for offset, mid in enumerate(reversed(chain), start=1):
                depth[mid] = base + offset
        items.sort(key=lambda m: (m["received"], depth[m["messageId"]]))
        return items

    def peers_summary(self) -> list[dict[str, Any]]:
        """Every peer written to or heard from: its relay, and the last message either way
        (the conversation view's order, so a reply in the second of its parent is later)."""
        out: dict[str, dict[str, Any]] = {}
        for item in self._timeline(None, None):
            out[item["peer"]] = {"did": item["peer"], "lastMessage": {
                "direction": item["direction"], "text": item["text"], "at": item["received"],
                "channel": item["channel"]}}
        for did, relay in self.db.all("SELECT did, relay FROM peers"):
            out.setdefault(did, {"did": did, "lastMessage": None})["relay"] = relay
        return [out[k] for k in sorted(out)]

