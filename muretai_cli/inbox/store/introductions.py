"""Introductions as this identity keeps them (schema version 11): senders the
gate admitted as introduced (``introduced``), credentials this identity issued
(``intros_issued``) and credentials it holds, gifted by their issuers (``intros_held``);
and the live introduction requests its inbox holds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from muretai_cli.inbox.store.base import StoreBase

if TYPE_CHECKING:
    from muretai_cli.artifacts.introduction import Introduction
    from muretai_cli.db import Database, Tx

__all__ = ["Introductions", "record_introduced"]


def _dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(dict(doc), ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def record_introduced(tx: Tx | Database, intro: Introduction, now: int) -> None:
    """The gate admitted ``intro.subject`` on ``intro``: an approved sender from now on, and
    who introduced it (never over a block: the gate refused a blocked one first). Written by
    the accept of the first contact (``Receipts.accept``), inside its transaction."""
    tx.execute("INSERT INTO introduced (sender, issuer, credential_id, doc, at) "
               "VALUES (?, ?, ?, ?, ?) ON CONFLICT (sender) DO NOTHING",
               (intro.subject, intro.issuer, intro.id, _dumps(intro.doc), now))
    if tx.all("INSERT INTO senders (did, status, since) VALUES (?, 'approved', ?) "
              "ON CONFLICT (did) DO UPDATE SET status=excluded.status, since=excluded.since "
              "WHERE senders.status NOT IN ('allowed', 'approved', 'blocked') RETURNING did",
              (intro.subject, now)):
        tx.execute("INSERT INTO decisions (at, action, sender, request_id) "
                   "VALUES (?, 'introduced', ?, ?)", (now, intro.subject, intro.id))


class Introductions(StoreBase):
    """The ``introduced``, ``intros_issued`` and ``intros_held`` tables."""

    def introduced_by(self, sender: str) -> str | None:
        """Who introduced ``sender`` (the issuer's DID), when the gate admitted it so."""
        row = self.db.one("SELECT issuer FROM introduced WHERE sender=?", (sender,))
        return str(row[0]) if row else None

    def admit_vouched(self, credential_id: str, now: int) -> list[str]:
        """Approve every held first contact whose vouch is ``credential_id`` (its proposal was
        approved): their messages delivered, their senders approved. Returns the senders."""
        rows = self.db.all("SELECT r.id, r.sender, v.vouch FROM requests r JOIN held_vouches "
                           "v ON v.request_id = r.id WHERE r.status='held' "
                           "ORDER BY r.received, r.seq")
        done: list[str] = []
        for request_id, sender, vouch in rows:
            if sender in done:
                continue
            try:
                cid = json.loads(vouch).get("id")
            except (ValueError, AttributeError):
                continue
            if cid == credential_id:
                self.approve(str(request_id), now)  # type: ignore[attr-defined]
                done.append(str(sender))
        return done

    def heard_from(self, did: str) -> bool:
        """Whether the inbox holds a message from ``did`` (a conversation is open)."""
        return self.db.one("SELECT 1 FROM inbox WHERE sender=? LIMIT 1", (did,)) is not None

    def record_issued(self, intro: Introduction, now: int) -> None:
        with self.db.transaction() as tx:
            tx.execute("INSERT INTO intros_issued (id, subject, target, mode, doc, issued, "
                       "valid_until) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                       (intro.id, intro.subject, intro.introduced_to, intro.provenance.mode,
                        _dumps(intro.doc), now, int(intro.valid_until)))

    def issued_intros(self) -> list[dict[str, Any]]:
        rows = self.db.all("SELECT id, subject, target, mode, issued, valid_until, doc FROM "
                           "intros_issued ORDER BY issued, id")
        keys = ("id", "subject", "target", "provenance", "issued", "validUntil")
        return [{**dict(zip(keys, r[:6], strict=True)), "credential": json.loads(r[6])}
                for r in rows]

    def keep_held(self, intro: Introduction, reach: tuple[str | None, str | None, str | None],
                  now: int) -> None:
        """Keep a credential gifted to this identity (its subject), with the reach of its
        target the gift named; a credential kept once is kept as it was."""
        url, relay, enc_pub = reach
        with self.db.transaction() as tx:
            tx.execute("INSERT INTO intros_held (id, issuer, target, doc, url, relay, enc_pub, "
                       "valid_until, received) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (id) DO NOTHING",
                       (intro.id, intro.issuer, intro.introduced_to, _dumps(intro.doc), url,
                        relay, enc_pub, int(intro.valid_until), now))

    def held_intros(self, *, target: str | None = None, now: int | None = None
                    ) -> list[dict[str, Any]]:
        """Credentials held, newest first; for one ``target`` and unexpired at ``now``
        when given."""
        where, params = [], list[object]()
        if target is not None:
            where.append("target=?")
            params.append(target)
        if now is not None:
            where.append("valid_until>?")
            params.append(now)
        sql = ("SELECT id, issuer, target, url, relay, enc_pub, valid_until, received, doc "
               "FROM intros_held" + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY received DESC, id")
        keys = ("id", "issuer", "target", "url", "relay", "encPub", "validUntil", "received")
        return [{**dict(zip(keys, r[:8], strict=True)), "credential": json.loads(r[8])}
                for r in self.db.all(sql, tuple(params))]

    def live_request(self, subject: str, target: str, *, me: str, since: int
                     ) -> dict[str, Any] | None:
        """The newest introduction request from ``subject`` for ``target`` in the inbox
        received at or after ``since``, as the signed six fields and ``sig`` (what a
        ``requested`` credential embeds); None when there is none."""
        from muretai_cli.artifacts.introduction import request_text

        row = self.db.one("SELECT message_id, context_id, text, sent, sig FROM inbox WHERE "
                          "sender=? AND text=? AND sent>=? AND sig IS NOT NULL "
                          "ORDER BY sent DESC, id DESC LIMIT 1",
                          (subject, request_text(target), since))
        if row is None:
            return None
        return {"contextId": row[1], "from": subject, "messageId": row[0], "text": row[2],
                "timestamp": row[3], "to": me, "sig": row[4]}
