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

from muretai_cli.db import (
    Database,
    Schema,
    json_rows,
    lock_key,
    open_database,
    padded_chunks,
    redact,
    require,
    upgrade,
)
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
""", """
ALTER TABLE relay_messages ADD COLUMN size {int} NOT NULL DEFAULT 0;
UPDATE relay_messages SET size = length(blob);
CREATE INDEX relay_messages_size ON relay_messages (to_did, size)
"""))

MAX_MAILBOX_BYTES = 64 * 1024 * 1024  # blob characters waiting for one DID (RelayLimits)
DepositOutcome = Literal["queued", "duplicate", "id-reused", "mailbox-full"]
EpochOutcome = Literal["current", "newer", "superseded"]


def default_db_path() -> Path:
    """``$MURETAI_HOME/relay/relay.sqlite3``."""
    return home_dir() / "relay" / "relay.sqlite3"


@dataclass(frozen=True, slots=True)
class Deposit:
    """One deposit to queue: checked and signed, not yet stored."""

    to: str
    sender: str
    sender_enc: str
    id: str
    blob: str
    received: int


def _digest(blob: str) -> bytes:
    """What tells an exact repeat of a deposit from new content under its id."""
    return hashlib.sha256(blob.encode("ascii")).digest()


# The relay's group commit on PostgreSQL (``deposit_many``), once its mailboxes are locked:
# one statement reads the rows that hold the batch's ids (``old``: an index probe per
# deposit; the LIMIT keeps the planner, which takes a JSON batch for a hundred rows, from a
# join that reads the whole table), ranks each new deposit among the batch's deposits into
# its mailbox (``k``), inserts those that fit beside what the mailbox holds, in the order
# they came, and answers per deposit. Its snapshot does not see its own inserts; the rank
# (and the running sum of sizes) counts them. A deposit refused for its size still counts
# in the rank and sum of the batch's later deposits into that mailbox (a stricter answer
# than one by one, only in a batch that meets the byte cap).
_DEPOSIT_COLUMNS = ("i", "t", "f", "e", "d", "b", "h", "r", "s")
_DEPOSITS_SQL = (
    "WITH v AS (SELECT * FROM json_to_recordset(?::json) AS v(i int, t text, f text, e text, "
    "d text, b text, h text, r bigint, s bigint)), "
    "old AS (SELECT v.i, m.from_did, m.digest FROM v, LATERAL (SELECT from_did, digest "
    "FROM relay_messages WHERE to_did = v.t AND id = v.d LIMIT 1) m), "
    "fresh AS (SELECT v.*, row_number() OVER (PARTITION BY v.t ORDER BY v.i) AS k, "
    "sum(v.s) OVER (PARTITION BY v.t ORDER BY v.i) AS cs FROM v "
    "WHERE NOT EXISTS (SELECT 1 FROM old WHERE old.i = v.i)), "
    "ins AS (INSERT INTO relay_messages (to_did, from_did, from_enc, id, blob, digest, "
    "received, size) SELECT t, f, e, d, b, decode(h, 'hex'), r, s FROM fresh WHERE k + (SELECT "
    "count(*) FROM relay_messages m WHERE m.to_did = fresh.t) <= ? AND cs + (SELECT "
    "coalesce(sum(size), 0) FROM relay_messages m WHERE m.to_did = fresh.t) <= ? ORDER BY i "
    "ON CONFLICT (to_did, id) DO NOTHING RETURNING to_did, id) "
    "SELECT v.i, ins.id IS NOT NULL, old.from_did, old.digest{notify} FROM v "
    "LEFT JOIN ins ON ins.to_did = v.t AND ins.id = v.d LEFT JOIN old ON old.i = v.i")
_DEPOSITS_NOTIFY_SQL = _DEPOSITS_SQL.format(
    notify=", CASE WHEN ins.id IS NOT NULL THEN pg_notify(?, v.t) END")
_DEPOSITS_SQL = _DEPOSITS_SQL.format(notify="")


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


# cards of DIDs that never listened: counted against a cap, pruned after --expire
_STRANGER_CARDS_SQL = ("SELECT count(*) FROM relay_cards WHERE NOT EXISTS "
                       "(SELECT 1 FROM relay_listeners l WHERE l.did = relay_cards.did)")
_EXPIRE_CARDS_SQL = ("DELETE FROM relay_cards WHERE ts<? AND NOT EXISTS "
                     "(SELECT 1 FROM relay_listeners l WHERE l.did = relay_cards.did)")
_CLAIM_EPOCH_SQL = ("INSERT INTO relay_listeners (did, epoch) VALUES (?, ?) ON CONFLICT (did) "
                    "DO UPDATE SET epoch=excluded.epoch "
                    "WHERE relay_listeners.epoch < excluded.epoch")


class RelayStore:
    """Mailboxes, listener epochs and cards. On SQLite one owner (the relay's event loop);
    on PostgreSQL called from the relay's threads (its pool hands each its connection)."""

    def __init__(self, db: Database, *, create: bool = True,
                 fix: str = "muretai db {verb} --relay --db URL") -> None:
        self.db = db
        try:
            if create:
                upgrade(db, SCHEMA)
            else:
                require(db, SCHEMA, fix=fix)
        except BaseException:
            db.close()
            raise

    @classmethod
    def open(cls, target: str | Path | None = None, *, durable: bool = False,
             create: bool = True) -> RelayStore:
        """A SQLite path or a ``postgresql://`` URL; the default file when None. With
        ``create=False`` the schema must already be this program's (``muretai db init``)."""
        where = target or default_db_path()
        return cls(open_database(where, namespace=NAMESPACE, durable=durable), create=create,
                   fix=f"muretai db {{verb}} --relay --db {redact(str(where))}")

    def deposit(self, *, to: str, sender: str, sender_enc: str, deposit_id: str, blob: str,
                now: int, max_waiting: int, max_bytes: int = MAX_MAILBOX_BYTES
                ) -> DepositOutcome:
        """Queue one deposit (``deposit_many`` of one)."""
        return self.deposit_many([Deposit(to, sender, sender_enc, deposit_id, blob, now)],
                                 max_waiting=max_waiting, max_bytes=max_bytes)[0]

    def deposit_many(self, items: Sequence[Deposit], *, max_waiting: int,
                     max_bytes: int = MAX_MAILBOX_BYTES,
                     channel: str | None = None) -> list[DepositOutcome]:
        """Queue deposits, each once; their outcomes in order, each as if they had been
        deposited one after another. An id is unique per mailbox: the same sender with the
        same blob is a ``duplicate`` (stored once), anything else under that id ``id-reused``
        (the first deposit under it wins, stored or in this batch); a mailbox holding
        ``max_waiting`` messages, or ``max_bytes`` of blobs, takes no more (``mailbox-full``),
        this batch's earlier deposits counted.

        On SQLite each is its own statement (one writer: the cap is exact). On PostgreSQL
        (a database declaring ``json_batches``) the whole batch is one transaction with one
        commit (the relay's group commit): it first takes an advisory lock per mailbox it
        deposits into, in one order, so batches of several processes into one mailbox run
        one after another (the cap is exact
        across processes, and no two batches wait for each other in a circle) while other
        mailboxes' batches run side by side; then one statement counts, checks and inserts
        the whole batch. With ``channel`` the same transaction signals each recipient that
        got a message (``NOTIFY``): other processes hear it when, and only if, it commits.
        """
        if not self.db.json_batches:  # declared by the database, not sniffed
            return [self._deposit_one(item, max_waiting, max_bytes) for item in items]
        first: dict[tuple[str, str], int] = {}  # (to, id) -> its first deposit in the batch
        for index, item in enumerate(items):
            first.setdefault((item.to, item.id), index)
        rows = [(i, items[i].to, items[i].sender, items[i].sender_enc, items[i].id,
                 items[i].blob, _digest(items[i].blob).hex(), items[i].received,
                 len(items[i].blob)) for i in first.values()]
        keys = sorted({lock_key(f"{NAMESPACE} mailbox {to}") for to, _ in first})
        with self.db.transaction(exclusive=False) as tx:
            tx.execute("SELECT pg_advisory_xact_lock(k) FROM unnest(?::bigint[]) AS k",
                       (keys,))
            # a new statement, a new snapshot: every batch that held these locks before
            # has committed, and is counted
            found = tx.all(_DEPOSITS_SQL if channel is None else _DEPOSITS_NOTIFY_SQL,
                           (json_rows(_DEPOSIT_COLUMNS, rows), max_waiting, max_bytes,
                            *(() if channel is None else (channel,))))
        # per first deposit: stored, or the row that holds its id (sender, digest), or full
        held: dict[int, tuple[str, bytes] | None] = {}
        stored: set[int] = set()
        for i, inserted, old_sender, old_digest, *_ in found:
            if inserted:
                stored.add(i)
                held[i] = (items[i].sender, _digest(items[i].blob))
            else:
                held[i] = None if old_sender is None else (old_sender, bytes(old_digest))
        out: list[DepositOutcome] = []
        for index, item in enumerate(items):
            winner = first[(item.to, item.id)]
            if index == winner and index in stored:
                out.append("queued")
            elif (owner := held[winner]) is None:
                out.append("mailbox-full")
            else:
                out.append("duplicate" if owner == (item.sender, _digest(item.blob))
                           else "id-reused")
        return out

    def _deposit_one(self, item: Deposit, max_waiting: int, max_bytes: int) -> DepositOutcome:
        digest = _digest(item.blob)
        # One statement on the common path: it inserts only into a mailbox with room and
        # only under an unused id; the rare refusals are told apart afterwards.
        inserted = self.db.execute(
            "INSERT INTO relay_messages (to_did, from_did, from_enc, id, blob, digest, received, "
            "size) SELECT ?, ?, ?, ?, ?, ?, ?, ? FROM (SELECT count(*) AS n, coalesce(sum(size), "
            "0) AS b FROM relay_messages WHERE to_did=?) AS w WHERE n < ? AND b + ? <= ? "
            "ON CONFLICT (to_did, id) DO NOTHING",
            (item.to, item.sender, item.sender_enc, item.id, item.blob, digest, item.received,
             len(item.blob), item.to, max_waiting, len(item.blob), max_bytes)).rowcount
        if inserted > 0:
            return "queued"
        row = self.db.one("SELECT from_did, digest FROM relay_messages WHERE to_did=? AND id=?",
                          (item.to, item.id))
        if row is None:
            return "mailbox-full"
        return "duplicate" if (row[0], bytes(row[1])) == (item.sender, digest) else "id-reused"

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

    def held_bytes(self) -> tuple[int, int]:
        """Blob characters waiting: in all, and for DIDs that never listened."""
        row = self.db.one("SELECT coalesce(sum(size), 0), coalesce(sum(CASE WHEN NOT EXISTS "
                          "(SELECT 1 FROM relay_listeners l WHERE l.did = m.to_did) THEN size "
                          "END), 0) FROM relay_messages m")
        return (int(row[0]), int(row[1])) if row is not None else (0, 0)

    def expire(self, before: int) -> int:
        """Delete every message received before ``before``; how many."""
        return max(self.db.execute("DELETE FROM relay_messages WHERE received<?",
                                   (before,)).rowcount, 0)

    def epoch(self, did: str) -> int | None:
        row = self.db.one("SELECT epoch FROM relay_listeners WHERE did=?", (did,))
        return None if row is None else int(row[0])

    def claim_epoch(self, did: str, epoch: int, *, void_from: int | None = None,
                    channel: str | None = None) -> EpochOutcome:
        """Keep the newest epoch per DID: ``newer`` (this one took over), ``current``, or
        ``superseded`` (a newer one holds it). A stored epoch at or past ``void_from`` (one
        no token valid now could carry: a replayed or pre-bound poisoned row) holds nothing
        and is taken over. With ``channel`` (PostgreSQL) a takeover signals ``did`` there when
        it commits (the older listener's held polls answer 409)."""
        stored = self.epoch(did)
        if stored == epoch:
            return "current"
        if stored is not None and stored > epoch and (void_from is None or stored < void_from):
            return "superseded"
        with self.db.transaction() as tx:
            if void_from is None:
                tx.execute(_CLAIM_EPOCH_SQL, (did, epoch))
            else:
                tx.execute(_CLAIM_EPOCH_SQL + " OR relay_listeners.epoch >= ?",
                           (did, epoch, void_from))
            row = tx.one("SELECT epoch FROM relay_listeners WHERE did=?", (did,))
            took = row is not None and int(row[0]) == epoch
            if took and channel is not None and self.db.notifies:
                tx.execute("SELECT pg_notify(?, ?)", (channel, did))
        return "newer" if took else "superseded"

    def put_card(self, did: str, ts: int, envelope: str) -> bool:
        """Store ``did``'s card envelope if ``ts`` is newer than the stored one's."""
        with self.db.transaction(exclusive=False) as tx:
            result = tx.execute(
                "INSERT INTO relay_cards (did, ts, envelope) VALUES (?, ?, ?) ON CONFLICT (did) "
                "DO UPDATE SET ts=excluded.ts, envelope=excluded.envelope "
                "WHERE relay_cards.ts < excluded.ts", (did, ts, envelope))
        return result.rowcount > 0

    def card_standing(self, did: str) -> tuple[bool, bool]:
        """Whether the relay holds a card for ``did``, and whether ``did`` ever listened."""
        row = self.db.one("SELECT (SELECT count(*) FROM relay_cards WHERE did=?), "
                          "(SELECT count(*) FROM relay_listeners WHERE did=?)", (did, did))
        return (bool(row[0]), bool(row[1])) if row is not None else (False, False)

    def stranger_cards(self) -> int:
        """How many cards are held for DIDs that never listened."""
        row = self.db.one(_STRANGER_CARDS_SQL)
        return int(row[0]) if row is not None else 0

    def expire_cards(self, before: int) -> int:
        """Delete the cards of DIDs that never listened, dated (``ts``) before ``before``."""
        return max(self.db.execute(_EXPIRE_CARDS_SQL, (before,)).rowcount, 0)

    def card(self, did: str) -> str | None:
        row = self.db.one("SELECT envelope FROM relay_cards WHERE did=?", (did,))
        return None if row is None else str(row[0])

    def close(self) -> None:
        self.db.close()
