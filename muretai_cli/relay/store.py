"""The relay's state: every SQL statement it runs, behind ``RelayStore``.

Tables: ``relay_messages`` (sealed deposits waiting for their recipient, deleted on
acknowledgement or expiry), ``relay_listeners`` (the newest listener epoch per DID) and
``relay_cards`` (the newest signed card envelope per DID). The SQL is portable (``?``
placeholders, ``ON CONFLICT``, no engine-only functions) and runs through
``muretai_cli.db``, so the same store lives in a SQLite file or a PostgreSQL schema.

Durability: a deposit is answered ``queued`` only after its transaction committed. SQLite
runs in WAL mode; with ``synchronous=NORMAL`` (the default) a committed transaction is in
the WAL file before ``COMMIT`` returns, so it survives the process being killed (kill -9)
at any moment; what it does not survive is the machine losing power before the OS writes
its cache back. ``durable=True`` (``muretai relay serve --durable``) uses
``synchronous=FULL`` -- an fsync per commit -- for that case too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from muretai_cli.db import Database, Schema, open_database, padded_chunks, require, upgrade
from muretai_cli.home import home_dir

NAMESPACE = "relay"
SCHEMA = Schema("relay", ("""
CREATE TABLE relay_messages (
  seq {serial}, to_did TEXT NOT NULL, from_did TEXT NOT NULL, from_enc TEXT NOT NULL,
  id TEXT NOT NULL, blob TEXT NOT NULL, digest {blob} NOT NULL, received {int} NOT NULL,
  UNIQUE (to_did, id));
CREATE INDEX relay_messages_mailbox ON relay_messages (to_did, seq);
CREATE INDEX relay_messages_age ON relay_messages (received);
CREATE TABLE relay_listeners (did TEXT PRIMARY KEY, epoch {int} NOT NULL);
CREATE TABLE relay_cards (did TEXT PRIMARY KEY, ts {int} NOT NULL, envelope TEXT NOT NULL)
""",))

DepositOutcome = Literal["queued", "duplicate", "id-reused", "mailbox-full"]
EpochOutcome = Literal["current", "newer", "superseded"]


def default_db_path() -> Path:
    """``$MURETAI_HOME/relay/relay.sqlite3``."""
    return home_dir() / "relay" / "relay.sqlite3"


@dataclass(frozen=True, slots=True)
class Waiting:
    """One sealed message as the relay hands it to its recipient."""

    id: str
    sender: str
    sender_enc: str
    blob: str
    received: int

    def to_json(self) -> dict[str, str | int]:
        return {"id": self.id, "from": self.sender, "from_enc": self.sender_enc,
                "blob": self.blob, "received": self.received}


# An ack deletes its ids 100 to a statement, one statement text (short chunks padded).
_ACK_CHUNK = 100
_ACK_SQL = ("DELETE FROM relay_messages WHERE to_did=? AND id IN ("  # noqa: S608 - only "?"s
            + ", ".join("?" * _ACK_CHUNK) + ")")


class RelayStore:
    """Mailboxes, listener epochs and cards. One owner (the relay's event loop)."""

    def __init__(self, db: Database, *, create: bool = True) -> None:
        self.db = db
        try:
            if create:
                upgrade(db, SCHEMA)
            else:
                require(db, SCHEMA, fix="muretai db {verb} --relay --db URL")
        except BaseException:
            db.close()
            raise

    @classmethod
    def open(cls, target: str | Path | None = None, *, durable: bool = False,
             create: bool = True) -> RelayStore:
        """A SQLite path or a ``postgresql://`` URL; the default file when None. With
        ``create=False`` the schema must already be this program's (``muretai db init``)."""
        return cls(open_database(target or default_db_path(), namespace=NAMESPACE,
                                 durable=durable), create=create)

    def deposit(self, *, to: str, sender: str, sender_enc: str, deposit_id: str, blob: str,
                now: int, max_waiting: int) -> DepositOutcome:
        """Queue a deposit once. An id is unique per mailbox: the same sender with the same
        blob is a duplicate (stored once); anything else under that id is ``id-reused``.

        The room check and the insert are one statement, so on SQLite (one writer) a mailbox
        never holds more than ``max_waiting``; PostgreSQL workers racing for the last slot
        may pass it by the few deposits in flight at that instant.
        """
        digest = hashlib.sha256(blob.encode("ascii")).digest()
        # One statement on the common path: it inserts only into a mailbox with room and
        # only under an unused id; the rare refusals are told apart afterwards.
        inserted = self.db.execute(
            "INSERT INTO relay_messages (to_did, from_did, from_enc, id, blob, digest, received) "
            "SELECT ?, ?, ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM relay_messages "
            "WHERE to_did=?) < ? ON CONFLICT (to_did, id) DO NOTHING",
            (to, sender, sender_enc, deposit_id, blob, digest, now, to, max_waiting)).rowcount
        if inserted > 0:
            return "queued"
        row = self.db.one("SELECT from_did, digest FROM relay_messages WHERE to_did=? AND id=?",
                          (to, deposit_id))
        if row is None:
            return "mailbox-full"
        return "duplicate" if (row[0], bytes(row[1])) == (sender, digest) else "id-reused"

    def waiting(self, did: str, *, limit: int, since: int) -> tuple[list[Waiting], bool]:
        """Up to ``limit`` messages for ``did`` received at or after ``since``, oldest first,
        and whether more wait."""
        rows = self.db.all("SELECT id, from_did, from_enc, blob, received FROM relay_messages "
                           "WHERE to_did=? AND received>=? ORDER BY seq LIMIT ?",
                           (did, since, limit + 1))
        found = [Waiting(r[0], r[1], r[2], r[3], int(r[4])) for r in rows[:limit]]
        return found, len(rows) > limit

    def ack(self, did: str, ids: Sequence[str]) -> int:
        """Delete those of ``did``'s messages; how many were deleted (idempotent)."""
        if not ids:
            return 0
        deleted = 0
        with self.db.transaction(exclusive=False) as tx:
            for chunk in padded_chunks(ids, _ACK_CHUNK):  # one statement per 100 ids
                deleted += max(tx.execute(_ACK_SQL, (did, *chunk)).rowcount, 0)
        return deleted

    def expire(self, before: int) -> int:
        """Delete every message received before ``before``; how many."""
        return max(self.db.execute("DELETE FROM relay_messages WHERE received<?",
                                   (before,)).rowcount, 0)

    def epoch(self, did: str) -> int | None:
        row = self.db.one("SELECT epoch FROM relay_listeners WHERE did=?", (did,))
        return None if row is None else int(row[0])

    def claim_epoch(self, did: str, epoch: int) -> EpochOutcome:
        """Keep the newest epoch per DID: ``newer`` (this one took over), ``current``, or
        ``superseded`` (a newer one holds it)."""
        stored = self.epoch(did)
        if stored == epoch:
            return "current"
        if stored is not None and stored > epoch:
            return "superseded"
        with self.db.transaction() as tx:
            tx.execute("INSERT INTO relay_listeners (did, epoch) VALUES (?, ?) ON CONFLICT (did) "
                       "DO UPDATE SET epoch=excluded.epoch "
                       "WHERE relay_listeners.epoch < excluded.epoch", (did, epoch))
            row = tx.one("SELECT epoch FROM relay_listeners WHERE did=?", (did,))
        return "newer" if row is not None and int(row[0]) == epoch else "superseded"

    def put_card(self, did: str, ts: int, envelope: str) -> bool:
        """Store ``did``'s card envelope if ``ts`` is newer than the stored one's."""
        with self.db.transaction(exclusive=False) as tx:
            result = tx.execute(
                "INSERT INTO relay_cards (did, ts, envelope) VALUES (?, ?, ?) ON CONFLICT (did) "
                "DO UPDATE SET ts=excluded.ts, envelope=excluded.envelope "
                "WHERE relay_cards.ts < excluded.ts", (did, ts, envelope))
        return result.rowcount > 0

    def card(self, did: str) -> str | None:
        row = self.db.one("SELECT envelope FROM relay_cards WHERE did=?", (did,))
        return None if row is None else str(row[0])

    def close(self) -> None:
        self.db.close()
