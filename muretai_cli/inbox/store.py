"""The door's state in SQLite: one database per identity under ``$MURETAI_HOME/doors``.

WAL with ``synchronous=NORMAL`` survives a process crash (kill -9) with every committed
transaction; ``durable=True`` uses ``synchronous=FULL`` so a commit also survives power loss.
The door holds one connection and calls it from its event loop only, so every transaction
is serialised by the loop itself; the owner's commands (``op inbox``...) open their own
connection beside it, which WAL allows.

Tables: grants, redemptions (one per grant and sender: what counts a use), connections
(what lets a sender in, bounded by its grant's expiry), inbox, requests (held first
contacts), senders (allow/block lists and decisions' lasting effect), decisions (the
owner's log, with times), replay (messageIds accepted or held, door-wide), meta.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from muretai_cli.errors import InputError, Refused
from muretai_cli.home import ensure_private_dir, home_dir

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS grants (
  id TEXT PRIMARY KEY, doc TEXT NOT NULL, uses INTEGER NOT NULL, used INTEGER NOT NULL DEFAULT 0,
  iat INTEGER NOT NULL, exp INTEGER NOT NULL, purpose TEXT, created INTEGER NOT NULL,
  revoked INTEGER);
CREATE TABLE IF NOT EXISTS redemptions (
  grant_id TEXT NOT NULL, sender TEXT NOT NULL, at INTEGER NOT NULL,
  PRIMARY KEY (grant_id, sender));
CREATE TABLE IF NOT EXISTS connections (
  sender TEXT NOT NULL, grant_id TEXT NOT NULL, opened INTEGER NOT NULL, expires INTEGER NOT NULL,
  PRIMARY KEY (sender, grant_id));
CREATE TABLE IF NOT EXISTS inbox (
  id INTEGER PRIMARY KEY, sender TEXT NOT NULL, message_id TEXT NOT NULL, context_id TEXT,
  text TEXT NOT NULL, sent INTEGER NOT NULL, received INTEGER NOT NULL,
  verified INTEGER NOT NULL, sig TEXT, via TEXT NOT NULL DEFAULT 'direct',
  UNIQUE (sender, message_id));
CREATE TABLE IF NOT EXISTS requests (
  id TEXT PRIMARY KEY, sender TEXT NOT NULL, message_id TEXT NOT NULL, context_id TEXT,
  text TEXT NOT NULL, sent INTEGER NOT NULL, received INTEGER NOT NULL, sig TEXT,
  status TEXT NOT NULL DEFAULT 'held', decided INTEGER);
CREATE INDEX IF NOT EXISTS requests_sender ON requests (sender, status);
CREATE TABLE IF NOT EXISTS senders (
  did TEXT PRIMARY KEY, status TEXT NOT NULL, since INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS decisions (
  id INTEGER PRIMARY KEY, at INTEGER NOT NULL, action TEXT NOT NULL, sender TEXT NOT NULL,
  request_id TEXT);
CREATE TABLE IF NOT EXISTS replay (message_id TEXT PRIMARY KEY, seen INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS inbox_remembers AFTER INSERT ON inbox WHEN NEW.via = 'direct'
BEGIN INSERT INTO replay (message_id, seen) VALUES (NEW.message_id, NEW.received); END;
"""

SenderStatus = Literal["allowed", "blocked", "approved", "rejected"]
REPLAY_WINDOW = 600


def doors_dir() -> Path:
    return home_dir() / "doors"


def db_path(did: str) -> Path:
    """``$MURETAI_HOME/doors/<key>.sqlite3``: one database per identity, named by its DID."""
    key = did.rsplit(":", 1)[-1]
    if not key.isalnum():
        raise InputError("bad-did", "a door database is named by a did:key")
    return doors_dir() / f"{key}.sqlite3"


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


@dataclass(frozen=True, slots=True)
class SenderView:
    """What policy needs to know about a sender, read in one place."""

    status: str | None
    valid_connection: bool
    any_connection: bool
    held_request: str | None


class DoorStore:
    """The door's SQLite database. Not thread-safe: one owner (an event loop or a command)."""

    def __init__(self, path: Path, *, durable: bool = False) -> None:
        ensure_private_dir(path.parent)
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, timeout=10.0,
                                  check_same_thread=False, cached_statements=256)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise InputError("bad-database", f"{path} is not a usable door database ({exc})",
                             hint="move it aside; the door starts a new one") from None
        path.chmod(0o600)

    def close(self) -> None:
        self.db.close()

    def _tx(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    # -- meta ------------------------------------------------------------------------
    def card_revision(self) -> str:
        row = self.db.execute("SELECT value FROM meta WHERE key='card_rev'").fetchone()
        return str(row[0]) if row else "0"

    def _bump_card(self) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES ('card_rev', ?) "
                        "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                        (secrets.token_hex(8),))

    # -- grants ----------------------------------------------------------------------
    def add_grant(self, grant: dict[str, Any], now: int) -> None:
        self._tx()
        try:
            self.db.execute(
                "INSERT INTO grants (id, doc, uses, iat, exp, purpose, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (grant["id"], json.dumps(grant, sort_keys=True), grant["uses"], grant["iat"],
                 grant["exp"], grant.get("purpose"), now))
            self._bump_card()
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def _grant_of(self, row: tuple[Any, ...]) -> GrantRow:
        return GrantRow(row[0], json.loads(row[1]), row[2], row[3], row[4], row[5], row[6],
                        row[7], row[8])

    def grants(self) -> list[GrantRow]:
        rows = self.db.execute("SELECT id, doc, uses, used, iat, exp, purpose, created, revoked "
                               "FROM grants ORDER BY created DESC, rowid DESC").fetchall()
        return [self._grant_of(r) for r in rows]

    def grant(self, grant_id: str) -> GrantRow | None:
        row = self.db.execute("SELECT id, doc, uses, used, iat, exp, purpose, created, revoked "
                              "FROM grants WHERE id=?", (grant_id,)).fetchone()
        return self._grant_of(row) if row else None

    def card_grant(self, now: int) -> GrantRow | None:
        """The newest usable grant (not revoked, not expired, uses left), or None."""
        row = self.db.execute(
            "SELECT id, doc, uses, used, iat, exp, purpose, created, revoked "
            "FROM grants WHERE revoked IS NULL AND exp > ? "
            "AND used < uses ORDER BY iat DESC, created DESC, rowid DESC LIMIT 1",
            (now,)).fetchone()
        return self._grant_of(row) if row else None

    def revoke(self, grant_id: str, now: int) -> GrantRow:
        self._tx()
        try:
            cur = self.db.execute("UPDATE grants SET revoked=? WHERE id=? AND revoked IS NULL",
                                  (now, grant_id))
            if cur.rowcount:
                self._bump_card()
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        row = self.grant(grant_id)
        if row is None:
            raise InputError("no-such-grant", f"no grant with id {grant_id!r}",
                             hint="list them with `muretai contact grants --as NAME`")
        return row

    def redeem(self, grant_id: str, sender: str, now: int) -> int:
        """Open a connection for ``sender`` under a grant; returns its expiry.

        One transaction: the use is counted, the connection opened, a rejection lifted.
        The same sender redeeming the same grant again changes nothing. Raises ``Refused``
        (``unknown-grant``, ``revoked``, ``expired``, ``exhausted``, ``connection-dropped``).
        """
        self._tx()
        try:
            row = self.db.execute("SELECT uses, used, exp, revoked FROM grants WHERE id=?",
                                  (grant_id,)).fetchone()
            if row is None:
                raise Refused("unknown-grant", "this door has no record of that grant")
            uses, used, exp, revoked = row
            if revoked is not None:
                raise Refused("revoked", "the grant was revoked")
            if exp <= now:
                raise Refused("expired", "the grant has expired")
            again = self.db.execute("SELECT 1 FROM redemptions WHERE grant_id=? AND sender=?",
                                    (grant_id, sender)).fetchone()
            if again:
                open_ = self.db.execute("SELECT 1 FROM connections WHERE grant_id=? AND "
                                        "sender=?", (grant_id, sender)).fetchone()
                if not open_:
                    raise Refused("connection-dropped", "that connection was closed by the "
                                                        "owner; a new grant is needed")
                self.db.execute("COMMIT")
                return int(exp)
            if used >= uses:
                raise Refused("exhausted", "the grant has no uses left")
            self.db.execute("UPDATE grants SET used=used+1 WHERE id=?", (grant_id,))
            self.db.execute("INSERT INTO redemptions (grant_id, sender, at) VALUES (?, ?, ?)",
                            (grant_id, sender, now))
            self.db.execute("INSERT OR REPLACE INTO connections (sender, grant_id, opened, "
                            "expires) VALUES (?, ?, ?, ?)", (sender, grant_id, now, exp))
            self.db.execute("DELETE FROM senders WHERE did=? AND status='rejected'", (sender,))
            if used + 1 >= uses:
                self._bump_card()
            self.db.execute("COMMIT")
            return int(exp)
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    # -- the ladder's reads ----------------------------------------------------------
    def lookup(self, message_id: str, sender: str, now: int) -> tuple[bool, str | None]:
        """One read for the ladder: (messageId seen in the window, the sender's status).

        Read-only, so it may run before the signature: nothing a stranger sends is written.
        """
        row = self.db.execute(
            "SELECT EXISTS (SELECT 1 FROM replay WHERE message_id=? AND seen>=?), "
            "(SELECT status FROM senders WHERE did=?)",
            (message_id, now - REPLAY_WINDOW, sender)).fetchone()
        return bool(row[0]), row[1]

    def sender_status(self, did: str) -> str | None:
        row = self.db.execute("SELECT status FROM senders WHERE did=?", (did,)).fetchone()
        return str(row[0]) if row else None

    def sender_view(self, did: str, now: int, status: str | None) -> SenderView:
        rows = self.db.execute(
            "SELECT c.expires, g.revoked FROM connections c LEFT JOIN grants g "
            "ON g.id = c.grant_id WHERE c.sender=?", (did,)).fetchall()
        valid = any(exp > now and revoked is None for exp, revoked in rows)
        held = self.db.execute("SELECT id FROM requests WHERE sender=? AND status='held' "
                               "LIMIT 1", (did,)).fetchone()
        return SenderView(status, valid, bool(rows), str(held[0]) if held else None)

    # -- commits ---------------------------------------------------------------------
    def accept(self, env: dict[str, Any], now: int) -> bool:
        """Commit a verified message to the inbox and replay memory. False if a replay.

        One statement in autocommit, so one transaction: the trigger ``inbox_remembers``
        writes the replay row, and a replay aborts the whole insert.
        """
        try:
            self.db.execute(
                "INSERT INTO inbox (sender, message_id, context_id, text, sent, received, "
                "verified, sig, via) VALUES (?, ?, ?, ?, ?, ?, 1, ?, 'direct')",
                (env["from"], env["messageId"], env["contextId"], env["text"],
                 env["timestamp"], now, env["sig"]))
            return True
        except sqlite3.IntegrityError:
            return False

    def hold(self, env: dict[str, Any], now: int) -> str | None:
        """Hold a first contact for the owner's decision; returns its request id (None: replay)."""
        request_id = f"r-{secrets.token_hex(8)}"
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT INTO replay (message_id, seen) VALUES (?, ?)",
                       (env["messageId"], now))
            db.execute("INSERT INTO requests (id, sender, message_id, context_id, text, sent, "
                       "received, sig) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (request_id, env["from"], env["messageId"], env["contextId"],
                        env["text"], env["timestamp"], now, env["sig"]))
            db.execute("COMMIT")
            return request_id
        except sqlite3.IntegrityError:
            db.execute("ROLLBACK")
            return None
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def prune(self, now: int) -> None:
        self.db.execute("DELETE FROM replay WHERE seen < ?", (now - REPLAY_WINDOW,))

    # -- the owner's side ------------------------------------------------------------
    def inbox(self, limit: int | None = 20) -> list[dict[str, Any]]:
        """Newest into the inbox first. ``received`` is when the door took the message in
        (for an approved first contact, when it was held); ``approved`` when you approved it."""
        rows = self.db.execute(
            "SELECT i.id, i.sender, i.message_id, i.context_id, i.text, i.sent, i.received, "
            "i.verified, i.via, (SELECT MIN(r.decided) FROM requests r WHERE i.via='approved' "
            "AND r.sender=i.sender AND r.message_id=i.message_id AND r.status='approved') "
            "AS approved FROM inbox i ORDER BY COALESCE(approved, i.received) DESC, i.id DESC "
            "LIMIT ?", (limit or -1,)).fetchall()
        keys = ("id", "from", "messageId", "contextId", "text", "timestamp", "received",
                "verified", "via", "approved")
        out = [dict(zip(keys, r, strict=True)) for r in rows]
        for item in out:
            item["verified"] = bool(item["verified"])
        return out

    def requests(self, *, all_: bool = False) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT id, sender, message_id, context_id, text, sent, received, status, decided "
            "FROM requests WHERE status='held' OR ? ORDER BY received, id", (all_,)).fetchall()
        keys = ("id", "from", "messageId", "contextId", "text", "timestamp", "received",
                "status", "decided")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def _held(self, request_id: str) -> tuple[Any, ...]:
        row = self.db.execute("SELECT id, sender, message_id, context_id, text, sent, received, "
                              "sig, status FROM requests WHERE id=?", (request_id,)).fetchone()
        if row is None:
            raise InputError("no-such-request", f"no held request with id {request_id!r}",
                             hint="list them with `muretai op --as NAME requests list`")
        if row[8] != "held":
            raise InputError("already-decided", f"request {request_id} was already {row[8]}")
        return tuple(row)

    def _set_sender(self, did: str, status: str, now: int) -> None:
        self.db.execute("INSERT INTO senders (did, status, since) VALUES (?, ?, ?) "
                        "ON CONFLICT(did) DO UPDATE SET status=excluded.status, "
                        "since=excluded.since", (did, status, now))

    def _log(self, now: int, action: str, sender: str, request_id: str | None = None) -> None:
        self.db.execute("INSERT INTO decisions (at, action, sender, request_id) "
                        "VALUES (?, ?, ?, ?)", (now, action, sender, request_id))

    def approve(self, request_id: str, now: int) -> dict[str, Any]:
        self._tx()
        try:
            rid, sender, mid, ctx, text, sent, received, sig, _ = self._held(request_id)
            self.db.execute("UPDATE requests SET status='approved', decided=? WHERE id=?",
                            (now, rid))
            self.db.execute("INSERT OR IGNORE INTO inbox (sender, message_id, context_id, text, "
                            "sent, received, verified, sig, via) VALUES (?, ?, ?, ?, ?, ?, 1, ?, "
                            "'approved')", (sender, mid, ctx, text, sent, received, sig))
            if self._status_in_tx(sender) not in ("allowed", "blocked"):
                self._set_sender(sender, "approved", now)
            self._log(now, "approve", sender, rid)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return {"id": rid, "from": sender, "decided": now, "status": "approved"}

    def _status_in_tx(self, did: str) -> str | None:
        return self.sender_status(did)

    def reject(self, request_id: str, now: int, *, block: bool = False) -> dict[str, Any]:
        self._tx()
        try:
            rid, sender, *_ = self._held(request_id)
            self.db.execute("UPDATE requests SET status='rejected', decided=? WHERE id=?",
                            (now, rid))
            self.db.execute("DELETE FROM connections WHERE sender=?", (sender,))
            if block:
                self._set_sender(sender, "blocked", now)
            elif self._status_in_tx(sender) != "blocked":
                self._set_sender(sender, "rejected", now)
            self._log(now, "reject+block" if block else "reject", sender, rid)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return {"id": rid, "from": sender, "decided": now,
                "status": "rejected", "blocked": block}

    def senders(self) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT did, status, since FROM senders ORDER BY since, did"
                               ).fetchall()
        return [{"did": d, "status": s, "since": t} for d, s, t in rows]

    def set_sender(self, did: str, status: SenderStatus | None, now: int) -> None:
        """allow / block, or ``None`` to unblock (drop any entry for that sender)."""
        self._tx()
        try:
            if status is None:
                self.db.execute("DELETE FROM senders WHERE did=?", (did,))
                self._log(now, "unblock", did)
            else:
                self._set_sender(did, status, now)
                self._log(now, {"allowed": "allow", "blocked": "block"}.get(status, status), did)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def decisions(self) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT at, action, sender, request_id FROM decisions "
                               "ORDER BY id").fetchall()
        return [{"at": a, "action": b, "sender": c, "requestId": d} for a, b, c, d in rows]
