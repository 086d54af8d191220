"""The per-identity store: one identity's door state, on SQLite or PostgreSQL.

By default one SQLite file per identity under ``$MURETAI_HOME/doors`` (created and upgraded
on open, as before). With ``--db postgresql://…`` the same tables live in the schema
``door_<key>`` of that database, created by ``muretai db init`` and shared by every process
serving the identity. All SQL is here, portable, and runs through ``Database.transaction``:

- exclusive transactions (grants, holds, decisions, lists) run one at a time per identity
  across processes: SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory lock;
- the hot path (``accept``) rests on unique keys alone (``replay.message_id`` and
  ``inbox (sender, message_id)``), so several processes commit messages side by side and a
  ``messageId`` is accepted once, whichever process saw it first.

Tables: grants, redemptions (one per grant and sender: what counts a use), connections
(what lets a sender in, bounded by its grant's expiry), inbox, requests (held first
contacts), senders (allow/block lists and decisions' lasting effect), decisions (the
owner's log, with times), replay (messageIds accepted or held, door-wide), meta (the
card's revision, the identity's policy), sent (what this identity sent, and its state),
peers (where a peer said it can be reached: its relay, learned from a verified message),
relayed (each relay deposit drained: its outcome, and whether it was shown yet: ``NEW``,
``SHOWING`` while a turn-check prints it, ``SHOWN``).

Received messages carry their channel (``door`` or ``relay``), the ``replyTo`` their
signed fields proved, the relay the sender named (``metadata.relay``) and, for a message
the door accepted, the signed reply it was given (answered again to an exact repeat), and
the door's Web Bot Auth verdict on the HTTP request that carried it, when it was signed.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import InputError, Refused
from muretai_cli.home import home_dir
from muretai_cli.seam import MESSAGE_WINDOW

if TYPE_CHECKING:
    from muretai_cli.db import Database, Schema, Tx

# Version 1 is the schema SQLite door files have always had (its trigger included);
# PostgreSQL starts from the portable equivalent. Version 2 drops the trigger (the store
# writes the replay row itself) and gives grants an explicit order column.
_V1_SQLITE = """
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
BEGIN INSERT INTO replay (message_id, seen) VALUES (NEW.message_id, NEW.received); END
"""
_V2_SQLITE = """
DROP TRIGGER IF EXISTS inbox_remembers;
ALTER TABLE grants ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE grants SET seq = rowid
"""
_V1_PORTABLE = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE grants (
  id TEXT PRIMARY KEY, doc TEXT NOT NULL, uses {int} NOT NULL, used {int} NOT NULL DEFAULT 0,
  iat {int} NOT NULL, exp {int} NOT NULL, purpose TEXT, created {int} NOT NULL,
  revoked {int}, seq {int} NOT NULL DEFAULT 0);
CREATE TABLE redemptions (
  grant_id TEXT NOT NULL, sender TEXT NOT NULL, at {int} NOT NULL,
  PRIMARY KEY (grant_id, sender));
CREATE TABLE connections (
  sender TEXT NOT NULL, grant_id TEXT NOT NULL, opened {int} NOT NULL, expires {int} NOT NULL,
  PRIMARY KEY (sender, grant_id));
CREATE TABLE inbox (
  id {serial}, sender TEXT NOT NULL, message_id TEXT NOT NULL, context_id TEXT,
  text TEXT NOT NULL, sent {int} NOT NULL, received {int} NOT NULL,
  verified {int} NOT NULL, sig TEXT, via TEXT NOT NULL DEFAULT 'direct',
  UNIQUE (sender, message_id));
CREATE TABLE requests (
  id TEXT PRIMARY KEY, sender TEXT NOT NULL, message_id TEXT NOT NULL, context_id TEXT,
  text TEXT NOT NULL, sent {int} NOT NULL, received {int} NOT NULL, sig TEXT,
  status TEXT NOT NULL DEFAULT 'held', decided {int});
CREATE INDEX requests_sender ON requests (sender, status);
CREATE TABLE senders (did TEXT PRIMARY KEY, status TEXT NOT NULL, since {int} NOT NULL);
CREATE TABLE decisions (
  id {serial}, at {int} NOT NULL, action TEXT NOT NULL, sender TEXT NOT NULL,
  request_id TEXT);
CREATE TABLE replay (message_id TEXT PRIMARY KEY, seen {int} NOT NULL)
"""


# Version 3: shared rate-limit counters (a fixed one-minute window per key). Unlogged on
# PostgreSQL: counters need no crash safety, and their writes then cost no WAL; a transaction
# that wrote nothing else commits without waiting for a disk flush (PostgreSQL's own rule
# for transactions that wrote no WAL; checked with pg_stat_wal.wal_sync).
_V3 = """
CREATE {unlogged} TABLE rate (bucket TEXT NOT NULL, win {int} NOT NULL, used {int} NOT NULL,
  PRIMARY KEY (bucket, win))
"""
RATE_WINDOW = 60
Limits = Sequence[tuple[str, int]]  # a request's rate buckets: (bucket, per minute)
# Version 4: conversations. What was sent, peers' relays, relayed deposits; the channel,
# proved replyTo, named relay and kept reply of received messages; an order for requests.
_V4 = """
ALTER TABLE inbox ADD COLUMN channel TEXT NOT NULL DEFAULT 'door';
ALTER TABLE inbox ADD COLUMN reply_to TEXT;
ALTER TABLE inbox ADD COLUMN relay TEXT;
ALTER TABLE inbox ADD COLUMN reply TEXT;
ALTER TABLE requests ADD COLUMN channel TEXT NOT NULL DEFAULT 'door';
ALTER TABLE requests ADD COLUMN reply_to TEXT;
ALTER TABLE requests ADD COLUMN relay TEXT;
ALTER TABLE requests ADD COLUMN seq {int} NOT NULL DEFAULT 0;
CREATE TABLE sent (
  id {serial}, peer TEXT NOT NULL, message_id TEXT NOT NULL UNIQUE, context_id TEXT,
  text TEXT NOT NULL, sent {int} NOT NULL, channel TEXT NOT NULL, state TEXT NOT NULL,
  reply_to TEXT, request_id TEXT, address TEXT);
CREATE INDEX sent_peer ON sent (peer, sent);
CREATE TABLE peers (did TEXT PRIMARY KEY, relay TEXT, updated {int} NOT NULL);
CREATE TABLE relayed (
  id {serial}, sender TEXT NOT NULL, deposit_id TEXT NOT NULL, message_id TEXT,
  outcome TEXT NOT NULL, reason TEXT, detail TEXT, request_id TEXT, at {int} NOT NULL,
  shown {int} NOT NULL DEFAULT 0, UNIQUE (sender, deposit_id))
"""


# Version 6: the Web Bot Auth verdict on the HTTP request that carried a message (JSON).
_V6 = """
ALTER TABLE inbox ADD COLUMN wba TEXT;
ALTER TABLE requests ADD COLUMN wba TEXT
"""


# Version 7: turn-check finds what it has not shown through an index, not a scan of every
# deposit ever drained; a claim names its claimant (host:pid:start), so a newer turn-check
# tells a live one's rows from a killed one's.
_V7 = """
CREATE INDEX relayed_shown ON relayed (shown, id);
ALTER TABLE relayed ADD COLUMN claimant TEXT
"""


def door_schema() -> Schema:
    from muretai_cli.db import Schema
    from muretai_cli.inbox.invites import INVITE_TABLES

    # Version 5: invites, their claims, and the contacts they made.
    return Schema("door", ({"sqlite": _V1_SQLITE, "postgresql": _V1_PORTABLE},
                           {"sqlite": _V2_SQLITE, "postgresql": ""}, _V3, _V4, INVITE_TABLES,
                           _V6, _V7))


SenderStatus = Literal["allowed", "blocked", "approved", "rejected"]
SentState = Literal["delivered", "queued", "held", "refused"]
REPLAY_WINDOW = 2 * MESSAGE_WINDOW  # a messageId is remembered as long as it could be fresh
# relayed.shown: drained, not printed yet | claimed by a turn-check printing it | printed
NEW, SHOWN, SHOWING = 0, 1, 2
# A received message's inbox row (``accept``): None when the inbox holds it already.
_INBOX_INSERT = ("INSERT INTO inbox (sender, message_id, context_id, text, sent, received, "
                 "verified, sig, via, channel, reply_to, relay, reply, wba) "
                 "VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?) "
                 "ON CONFLICT (sender, message_id) DO NOTHING RETURNING id")
# Which relayed deposits are committed, 100 (sender, deposit id) pairs to a statement.
_SEEN_CHUNK = 100
_SEEN_SQL = ("SELECT sender, deposit_id FROM relayed WHERE "  # noqa: S608 - only "?"s
             + " OR ".join(["(sender=? AND deposit_id=?)"] * _SEEN_CHUNK))
# What turn-check has not shown yet, oldest first (through the index ``relayed_shown``).
_RELAYED_ITEM = "id, sender, deposit_id, message_id, outcome, reason, detail, request_id, at"
UNSHOWN = f"SELECT {_RELAYED_ITEM} FROM relayed WHERE shown=? ORDER BY id"  # noqa: S608


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


def spend_use(tx: Tx, kind: Uses, key: str, who: str, now: int) -> Spent:
    """Spend one use of token ``key`` for ``who`` inside ``tx`` (an exclusive transaction,
    so racing spends over any number of processes never exceed ``uses``). Spending again
    for the same ``who`` spends nothing. ``Refused`` with ``kind``'s codes otherwise."""
    row = tx.one(kind.read, (key,))
    if row is None:
        raise Refused(*kind.refusals["unknown"])
    uses, used, exp, revoked = row
    if revoked is not None:
        raise Refused(*kind.refusals["revoked"])
    if exp <= now:
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

class DoorStore:
    """One identity's door state, on the database it is given (one owner: a loop or a command).

    ``DoorStore(path)`` opens (creating or upgrading) a SQLite file; ``open_door_store``
    picks the backend from a ``--db`` value. Nothing above this class knows which it has.
    """

    def __init__(self, where: Path | Database, *, durable: bool = False) -> None:
        from muretai_cli.db import Database

        if isinstance(where, Database):
            self.db = where
        else:
            from muretai_cli.db import open_database, upgrade

            self.db = open_database(where, namespace="door", durable=durable)
            try:
                upgrade(self.db, door_schema())
            except BaseException:
                self.db.close()
                raise
        self.where = self.db.describe()
        self._batched = False  # inside ``batch``: one transaction for every call

    def close(self) -> None:
        self.db.close()

    # -- meta ------------------------------------------------------------------------
    def card_revision(self) -> str:
        row = self.db.one("SELECT value FROM meta WHERE key='card_rev'")
        return str(row[0]) if row else "0"

    def _bump_card(self, tx: Tx) -> None:
        tx.execute("INSERT INTO meta (key, value) VALUES ('card_rev', ?) "
                   "ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                   (secrets.token_hex(8),))

    # -- grants ----------------------------------------------------------------------
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

    # -- the ladder's reads ----------------------------------------------------------
    def lookup(self, message_id: str, sender: str, now: int) -> tuple[bool, str | None]:
        """One read for the ladder: (messageId seen in the window, the sender's status).

        Read-only, so it may run before the signature: nothing a stranger sends is written.
        """
        row = self.db.one(
            "SELECT EXISTS (SELECT 1 FROM replay WHERE message_id=? AND seen>=?), "
            "(SELECT status FROM senders WHERE did=?)",
            (message_id, now - REPLAY_WINDOW, sender))
        return (bool(row[0]), row[1]) if row else (False, None)

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

    # -- commits ---------------------------------------------------------------------
    def accept(self, env: dict[str, Any], now: int) -> bool:
        """Commit a verified message to the inbox and replay memory. False if a replay.

        Not exclusive: the unique keys decide. Two processes racing with one ``messageId``
        both insert its replay row; the database lets one commit and the other finds it.
        ``env`` may carry ``channel`` (door | relay), a proved ``replyTo``, the ``relay``
        the sender named, the signed ``reply`` given, and a relayed message's ``depositId``
        (recorded in the same transaction, so a redelivery is recognised).
        """
        channel = env.get("channel", "door")
        if self.db.dialect == "postgresql" and _door_taken(env):
            return self.lookup_and_accept((), [(env, now, ())])[1][0][0]
        row = (env["from"], env["messageId"], env["contextId"], env["text"], env["timestamp"],
               now, env["sig"], "direct" if channel == "door" else channel, channel,
               env.get("replyTo"), env.get("relay"), env.get("reply"), env.get("wba"))
        if channel != "door" and self._batched:
            # A drain's listen answer is ONE transaction (``batch``) that any failure rolls
            # back whole (turn-check lets database errors through), and nothing is written
            # when the inbox holds the message already: no savepoint per message.
            if not self.db.all(_INBOX_INSERT, row):
                return False
            self._after_receipt(self.db, env, "accepted", None, now)
            return True
        try:
            with self.db.transaction(exclusive=False) as tx:
                if channel == "door" and not tx.all(
                        "INSERT INTO replay (message_id, seen) VALUES (?, ?) "
                        "ON CONFLICT (message_id) DO NOTHING RETURNING message_id",
                        (env["messageId"], now)):
                    return False
                if not tx.all(_INBOX_INSERT, row):
                    raise _Replayed
                self._after_receipt(tx, env, "accepted", None, now)
        except _Replayed:
            return False
        return True

    def lookup_and_accept(self, lookups: Sequence[tuple[str, str, int]],
                          accepts: Sequence[tuple[dict[str, Any], int, Limits]]
                          ) -> tuple[list[tuple[bool, str | None]], list[tuple[bool, int]]]:
        """Many ``lookup(message_id, sender, now)``, and many accepts of a verified message
        ``(env, now, limits)``, at once: their results, in order (the door's group commit on
        PostgreSQL). An accept's result is ``(accepted, wait)``: ``wait`` > 0 when one of its
        rate ``limits`` (``take_rate``'s) refused it (nothing written for it), else whether
        it was accepted (False: a replay).

        On PostgreSQL all lookups are one statement (a read) and the accepts of messages the
        door took (``channel`` door) one more, a transaction of its own: every accept of the
        batch commits or none does (an exception: nothing committed). Rate limits are
        counted just before it (``_count_rates``, waiting for no flush): as with
        ``take_rate``, a request counted is not given back if its commit then fails. Within
        the batch a ``messageId`` is accepted once: the first copy the rates admit is
        written, every later copy is a replay (False) without reaching the database. Rows
        go in ``messageId`` order, so batches racing in several processes take their key
        locks in one order (no deadlock). Any other message, and every one on SQLite, is
        taken in turn (``take_rate``, then ``accept``, each its own transaction).
        """
        if self.db.dialect != "postgresql":
            return ([self.lookup(*item) for item in lookups],
                    [self._take_and_accept(env, now, limits) for env, now, limits in accepts])
        batched = [i for i, (env, _, _) in enumerate(accepts) if _door_taken(env)]
        counted = [i for i in batched if accepts[i][2]]
        waits = dict.fromkeys(range(len(accepts)), 0)
        if counted:
            # counted first, without waiting for a disk flush (the rate table is unlogged):
            # the buckets' locks (the door's total is one row every process updates) are
            # held for a statement, not across the commit's flush
            for i, wait in zip(counted, _count_rates(
                    self.db, [(accepts[i][2], accepts[i][1]) for i in counted]), strict=True):
                waits[i] = wait
        first = _first_copies(accepts, [i for i in batched if not waits[i]])
        statements = ([_lookup_statement(lookups)] if lookups else []) + (
            [_accept_statement(accepts, first)] if first else [])
        results = self.db.execute_each(statements) if statements else []
        looked_rows = results[0].rows if lookups else []
        taken_rows = results[-1].rows if first else []
        looked = [(bool(seen), status) for seen, status in looked_rows]
        taken = {row[0] for row in taken_rows}
        results_by_index: dict[int, tuple[bool, int]] = {
            i: (False, waits[i]) if waits[i] else (accepts[i][0]["messageId"] in taken and
                                                   first.get(accepts[i][0]["messageId"]) == i,
                                                   0)
            for i in batched}
        return looked, [results_by_index[i] if i in results_by_index
                        else self._take_and_accept(env, now, limits)
                        for i, (env, now, limits) in enumerate(accepts)]

    def _take_and_accept(self, env: dict[str, Any], now: int, limits: Limits
                         ) -> tuple[bool, int]:
        """``take_rate`` then ``accept``, one after the other: ``(accepted, wait)``."""
        wait = self.take_rate(limits, now) if limits else 0
        return (False, wait) if wait else (self.accept(env, now), 0)

    def _after_receipt(self, tx: Tx | Database, env: dict[str, Any], outcome: str,
                       request_id: str | None, now: int) -> None:
        if env.get("relay"):
            tx.execute("INSERT INTO peers (did, relay, updated) VALUES (?, ?, ?) "
                       "ON CONFLICT (did) DO UPDATE SET relay=excluded.relay, "
                       "updated=excluded.updated", (env["from"], env["relay"], now))
        if env.get("depositId") is not None:
            tx.execute("INSERT INTO relayed (sender, deposit_id, message_id, outcome, "
                       "request_id, at) VALUES (?, ?, ?, ?, ?, ?)",
                       (env["from"], env["depositId"], env["messageId"], outcome,
                        request_id, now))

    def kept_reply(self, env: dict[str, Any]) -> dict[str, Any] | None:
        """The signed reply the door gave this exact message (same six fields, same sig);
        None for anything that differs, or that the door did not accept."""
        row = self.db.one("SELECT context_id, text, sent, sig, reply FROM inbox WHERE "
                          "sender=? AND message_id=? AND channel='door'",
                          (env["from"], env["messageId"]))
        if row is None or row[4] is None:
            return None
        if (row[0], row[1], row[2], row[3]) != (env["contextId"], env["text"],
                                                env["timestamp"], env["sig"]):
            return None
        reply: dict[str, Any] = json.loads(row[4])
        return reply

    def keep_reply(self, sender: str, message_id: str, reply: str) -> None:
        """Keep ``reply`` (signed JSON) as the answer to a message the door accepted, in
        place of the receipt (``serve --on-message``): an exact repeat is given it."""
        with self.db.transaction(exclusive=False) as tx:
            tx.execute("UPDATE inbox SET reply=? WHERE sender=? AND message_id=? AND "
                       "channel='door'", (reply, sender, message_id))

    def hold(self, env: dict[str, Any], now: int) -> str | None:
        """Hold a message for the owner's decision; returns the sender's request id (the
        first held one: one request per stranger, whichever process held it), None for a
        replay. Every message of a sender awaiting a decision is kept (none is dropped),
        each in its own row, in order; approving or rejecting one decides them all.
        """
        channel = env.get("channel", "door")
        with self.db.transaction() as tx:
            if channel == "door":
                if not tx.all("INSERT INTO replay (message_id, seen) VALUES (?, ?) "
                              "ON CONFLICT (message_id) DO NOTHING RETURNING message_id",
                              (env["messageId"], now)):
                    return None
            elif tx.one("SELECT 1 FROM requests WHERE sender=? AND message_id=?",
                        (env["from"], env["messageId"])):
                return None
            request_id = f"r-{secrets.token_hex(8)}"
            tx.execute("INSERT INTO requests (id, sender, message_id, context_id, text, sent, "
                       "received, sig, channel, reply_to, relay, wba, seq) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                       "(SELECT COALESCE(MAX(seq), 0) + 1 FROM requests))",
                       (request_id, env["from"], env["messageId"], env["contextId"],
                        env["text"], env["timestamp"], now, env["sig"], channel,
                        env.get("replyTo"), env.get("relay"), env.get("wba")))
            self._after_receipt(tx, env, "held", request_id, now)
            first = tx.one("SELECT id FROM requests WHERE sender=? AND status='held' "
                           "ORDER BY seq LIMIT 1", (env["from"],))
            return str(first[0]) if first else request_id

    def prune(self, now: int) -> None:
        self.db.execute("DELETE FROM replay WHERE seen < ?", (now - REPLAY_WINDOW,))
        self.db.execute("DELETE FROM rate WHERE win < ?", (now // RATE_WINDOW - 1,))

    def take_rate(self, limits: Sequence[tuple[str, int]], now: int) -> int:
        """Count one request against every ``(bucket, per_minute)`` in this minute's window,
        all or none: 0 when admitted, else seconds until the window turns.

        Shared by every process on the store: a bucket's count in a window is exact (each
        admitted request increments it under the row's lock; refused ones do not count),
        and as a fixed window it lets up to twice the rate through across a window's edge.
        """
        win = now // RATE_WINDOW
        try:
            with self.db.transaction(exclusive=False) as tx:
                for bucket, per_minute in limits:
                    if not tx.all("INSERT INTO rate (bucket, win, used) VALUES (?, ?, 1) "
                                  "ON CONFLICT (bucket, win) DO UPDATE SET used=rate.used+1 "
                                  "WHERE rate.used < ? RETURNING used",
                                  (bucket, win, per_minute)):
                        raise _Full
        except _Full:
            return RATE_WINDOW - now % RATE_WINDOW
        return 0

    def take_rates(self, items: Sequence[tuple[Limits, int]]) -> list[int]:
        """Many ``take_rate(limits, now)`` at once, in order: each item's wait (0: admitted
        and counted). On PostgreSQL the batch is counted together, without waiting for a
        disk flush (``_count_rates``: one statement when no bucket fills); elsewhere each
        item is taken in turn."""
        if self.db.dialect != "postgresql":
            return [self.take_rate(limits, now) for limits, now in items]
        return _count_rates(self.db, items)

    # -- the owner's side ------------------------------------------------------------
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
            item["wba"] = _wba_of(item["wba"])
        return out

    def requests(self, *, all_: bool = False) -> list[dict[str, Any]]:
        rows = self.db.all(
            "SELECT id, sender, message_id, context_id, text, sent, received, status, decided, "
            "wba FROM requests WHERE status='held' OR ?=1 ORDER BY received, seq", (int(all_),))
        keys = ("id", "from", "messageId", "contextId", "text", "timestamp", "received",
                "status", "decided", "wba")
        from muretai_cli.db import damaged

        out = [{**dict(zip(keys, r, strict=True)), "damaged": damaged(r)} for r in rows]
        for item in out:
            item["wba"] = _wba_of(item["wba"])
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


    # -- the conversation: what this identity sent, where peers are, relayed deposits --
    def setting(self, key: str) -> str | None:
        row = self.db.one("SELECT value FROM meta WHERE key=?", (key,))
        return str(row[0]) if row else None

    def set_setting(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, value))

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

    def relayed_lookup(self, sender: str, message_id: str) -> tuple[bool, str | None]:
        """One read for a relayed message: (its ``(sender, messageId)`` is already in the
        inbox or held, the sender's status) -- a drain asks both of every message."""
        row = self.db.one(
            "SELECT EXISTS (SELECT 1 FROM inbox WHERE sender=? AND message_id=?) OR EXISTS "
            "(SELECT 1 FROM requests WHERE sender=? AND message_id=?), "
            "(SELECT status FROM senders WHERE did=?)",
            (sender, message_id, sender, message_id, sender))
        return (bool(row[0]), row[1]) if row else (False, None)

    def received_by_id(self, message_id: str) -> dict[str, Any] | None:
        row = self.db.one("SELECT sender FROM inbox WHERE message_id=? UNION ALL "
                              "SELECT sender FROM requests WHERE message_id=? LIMIT 1",
                              (message_id, message_id))
        return self.received(str(row[0]), message_id) if row else None

    def deposits_seen(self, pairs: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of these ``(sender, deposit id)`` are committed already (a listen answer's
        redeliveries): one statement per 100, each pair found through the unique index."""
        from muretai_cli.db import padded_chunks

        found: set[tuple[str, str]] = set()
        values = [value for pair in pairs for value in pair]
        for params in padded_chunks(values, 2 * _SEEN_CHUNK):
            found.update((str(s), str(d)) for s, d in self.db.all(_SEEN_SQL, params))
        return found

    def deposit_seen(self, sender: str, deposit_id: str) -> bool:
        row = self.db.one("SELECT 1 FROM relayed WHERE sender=? AND deposit_id=?",
                              (sender, deposit_id))
        return row is not None

    def record_refused(self, sender: str, deposit_id: str, reason: str, detail: str,
                       now: int) -> None:
        """A deposit that was not a message for us: reported once, never shown as one."""
        self.db.execute("INSERT INTO relayed (sender, deposit_id, outcome, reason, detail, at) "
                        "VALUES (?, ?, 'refused', ?, ?, ?) ON CONFLICT (sender, deposit_id) "
                        "DO NOTHING", (sender, deposit_id, reason, detail, now))

    def record_joined(self, sender: str, deposit_id: str, name: str, now: int, *,
                      new_contact: bool = True) -> None:
        """A deposit that was an honoured invite claim (``name``: the joiner's own words);
        its code says whether the joiner became a contact or already was one."""
        self.db.execute("INSERT INTO relayed (sender, deposit_id, outcome, reason, detail, at) "
                        "VALUES (?, ?, 'joined', ?, ?, ?) ON CONFLICT (sender, deposit_id) "
                        "DO NOTHING", (sender, deposit_id,
                                       "joined" if new_contact else "known-contact", name, now))

    def _relayed_items(self, rows: list[Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for rid, sender, deposit, mid, outcome, reason, detail, request_id, at in rows:
            item: dict[str, Any] = {"row": rid, "from": sender, "depositId": deposit,
                                    "outcome": outcome, "at": at}
            if outcome in ("refused", "joined"):
                item["reason"] = {"code": reason, "message": detail}
            else:
                item["message"] = self.received(sender, str(mid))
                item["requestId"] = request_id
            out.append(item)
        return out

    def unshown(self) -> list[dict[str, Any]]:
        """Relayed deposits not yet shown, oldest first, with the message each became."""
        return self._relayed_items(self.db.all(UNSHOWN, (NEW,)))

    def claim(self, rows: list[int], claimant: str) -> list[int]:
        """Claim those rows for showing (``NEW`` -> ``SHOWING``, with the ``claimant``'s
        name) in one transaction and say which were claimed: a row another turn-check
        claimed first is not. The caller renders first, claims, prints, then
        ``mark_shown``: the window in which a kill leaves a row unconfirmed is the write."""
        claimed: list[int] = []
        with self.db.transaction() as tx:
            for row in rows:
                if tx.execute("UPDATE relayed SET shown=?, claimant=? WHERE id=? AND shown=?",
                              (SHOWING, claimant, row, NEW)).rowcount > 0:
                    claimed.append(row)
        return claimed

    def mark_shown(self, rows: list[int]) -> None:
        """Those claimed rows were printed."""
        with self.db.transaction(exclusive=False) as tx:
            for row in rows:
                tx.execute("UPDATE relayed SET shown=? WHERE id=?", (SHOWN, row))

    def take_interrupted(self, alive: Callable[[str | None], bool]) -> list[dict[str, Any]]:
        """Rows a turn-check claimed and did not mark shown, whose claimant is not ``alive``:
        it stopped (kill -9) between claiming and confirming, so they may or may not have
        been printed. Never printed again (exactly once); marked shown and returned so the
        caller can name them. A live claimant's rows are left to it (it is printing them)."""
        with self.db.transaction() as tx:
            rows = [r for r in tx.all(
                f"SELECT {_RELAYED_ITEM}, claimant FROM relayed WHERE shown=? "  # noqa: S608
                "ORDER BY id", (SHOWING,)) if not alive(r[9])]
            for row in rows:
                tx.execute("UPDATE relayed SET shown=? WHERE id=? AND shown=?",
                           (SHOWN, row[0], SHOWING))
        return self._relayed_items([r[:9] for r in rows])

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every call on this store inside the block commits together, or none does (a
        turn-check commits a listen answer's messages in one transaction, then acks)."""
        outer = self.db
        with outer.batch() as inner:
            self.db, self._batched = inner, True
            try:
                yield
            finally:
                self.db, self._batched = outer, False

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
            item["wba"] = _wba_of(item["wba"])
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


def _wba_of(text: str | None) -> dict[str, Any] | None:
    """The stored Web Bot Auth verdict of a received message (None: the request had none)."""
    if text is None:
        return None
    doc: dict[str, Any] = json.loads(text)
    return doc


_ACCEPT_COLUMNS = ("message_id", "sender", "context_id", "text", "sent", "received", "sig",
                   "reply_to", "relay", "reply", "wba")


def _json_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as one JSON parameter (``db.json_rows``, shared with the relay's store)."""
    from muretai_cli.db import json_rows

    return json_rows(columns, rows)


def _door_taken(env: dict[str, Any]) -> bool:
    """A message the door took itself (not drained from a relay): what the door's group
    commit writes for a whole batch in one statement (``_accept_statement``)."""
    return bool(env.get("channel", "door") == "door")


def _first_copies(accepts: Sequence[tuple[dict[str, Any], int, Limits]],
                  indexes: Sequence[int]) -> dict[str, int]:
    """messageId -> the index of its first copy among ``indexes`` (the copies written)."""
    first: dict[str, int] = {}
    for index in indexes:
        first.setdefault(accepts[index][0]["messageId"], index)
    return first


def _lookup_statement(lookups: Sequence[tuple[str, str, int]]) -> tuple[str, tuple[str]]:
    """One statement that answers every ``lookup(message_id, sender, now)`` of a batch, in
    order: (messageId seen in the window, the sender's status)."""
    return (
        "SELECT EXISTS (SELECT 1 FROM replay WHERE message_id=v.m AND seen>=v.since), "
        "(SELECT status FROM senders WHERE did=v.s) FROM ROWS FROM (json_to_recordset("
        "?::json) AS (m text, s text, since bigint)) WITH ORDINALITY AS v(m, s, since, "
        "i) ORDER BY v.i",
        # a batch is one JSON parameter: far cheaper for the driver than an array a column
        (_json_rows(("m", "s", "since"), [(m, s, now - REPLAY_WINDOW)
                                           for m, s, now in lookups]),))


def _accept_statement(accepts: Sequence[tuple[dict[str, Any], int, Limits]],
                      first: dict[str, int]) -> tuple[str, tuple[str]]:
    """One statement that accepts the messages ``first`` names: their replay rows, their
    inbox rows and, for those that named a relay, the sender's ``peers`` row; it returns
    the messageIds accepted (a taken one is a replay). Rows go in messageId order (peers
    in sender order, one per sender), so racing batches take their locks in one order."""
    rows = [(e["messageId"], e["from"], e["contextId"], e["text"], e["timestamp"], now,
             e["sig"], e.get("replyTo"), e.get("relay") or None, e.get("reply"), e.get("wba"))
            for e, now, _ in (accepts[first[k]] for k in sorted(first))]
    return (
        "WITH v AS (SELECT * FROM json_to_recordset(?::json) AS v(message_id text, "
        "sender text, context_id text, text text, sent bigint, received bigint, sig text, "
        "reply_to text, relay text, reply text, wba text)), "
        "r AS (INSERT INTO replay (message_id, seen) SELECT message_id, received FROM v "
        "ORDER BY message_id ON CONFLICT (message_id) DO NOTHING RETURNING message_id), "
        "i AS (INSERT INTO inbox (sender, message_id, context_id, text, sent, received, "
        "verified, sig, via, reply_to, relay, reply, wba) SELECT v.sender, v.message_id, "
        "v.context_id, v.text, v.sent, v.received, 1, v.sig, 'direct', v.reply_to, v.relay, "
        "v.reply, v.wba FROM v JOIN r ON r.message_id = v.message_id ORDER BY v.message_id "
        "ON CONFLICT (sender, message_id) DO NOTHING RETURNING message_id, sender, relay, "
        "received), "
        "p AS (INSERT INTO peers (did, relay, updated) SELECT DISTINCT ON (sender) sender, "
        "relay, received FROM i WHERE relay IS NOT NULL ORDER BY sender, received DESC, "
        "message_id DESC ON CONFLICT (did) DO UPDATE SET relay=excluded.relay, "
        "updated=excluded.updated) "
        "SELECT message_id FROM i",
        (_json_rows(_ACCEPT_COLUMNS, rows),))


def _count_rates(db: Database, items: Sequence[tuple[Limits, int]]) -> list[int]:
    """Count each ``(limits, now)`` as ``take_rate`` would one after another (PostgreSQL):
    each item's wait (0: admitted and counted). No transaction waits for a disk flush (the
    rate table is unlogged).

    The common case is one statement: if every bucket the batch names can take all of the
    batch (its count plus the batch's requests stays within its limit), one at a time
    would admit every item, and the statement adds the batch's requests to each count,
    row by row under the row's lock (new buckets made, in one order). When a bucket cannot
    take its share, that statement leaves it as it was but has added to the others: then,
    in one transaction, every bucket of the batch is locked (in one order, so racing
    batches never deadlock) and read, what was just added is given back, the items are
    admitted one by one (each against every bucket or none) and the counts written. So a
    count never passes its limit; while that transaction runs (a few round trips, and only
    when a bucket is full) another process may read a count up to one batch too high and
    refuse a request early.
    """
    need: dict[tuple[str, int], int] = {}
    cap: dict[tuple[str, int], int] = {}
    for limits, now in items:
        for bucket, per_minute in limits:
            key = (bucket, now // RATE_WINDOW)
            need[key] = need.get(key, 0) + 1
            cap[key] = min(cap.get(key, per_minute), per_minute)
    if not need:
        return [0] * len(items)
    keys = sorted(need)
    added = {(str(b), int(w)) for b, w in db.all(
        "WITH v AS (SELECT * FROM json_to_recordset(?::json) AS v(b text, w bigint, n bigint, "
        "cap bigint)) INSERT INTO rate AS r (bucket, win, used) SELECT b, w, n FROM v WHERE "
        "n <= cap ORDER BY b, w ON CONFLICT (bucket, win) DO UPDATE SET used = r.used + "
        "excluded.used WHERE r.used + excluded.used <= (SELECT v.cap FROM v WHERE "
        "v.b = r.bucket AND v.w = r.win) RETURNING bucket, win",
        (_json_rows(("b", "w", "n", "cap"), [(b, w, need[(b, w)], cap[(b, w)])
                                             for b, w in keys]),))}
    if len(added) == len(keys):
        return [0] * len(items)
    waits: list[int] = []
    with db.transaction(exclusive=False) as tx:
        # each bucket's row made if new, locked (the no-op update takes the row's lock) and read
        before = {(b, w): int(u) for b, w, u in tx.all(
            "INSERT INTO rate (bucket, win, used) SELECT b, w, 0 FROM json_to_recordset("
            "?::json) AS v(b text, w bigint) ORDER BY b, w ON CONFLICT (bucket, win) DO "
            "UPDATE SET used = rate.used RETURNING bucket, win, used",
            (_json_rows(("b", "w"), keys),))}
        used = {key: count - (need[key] if key in added else 0)
                for key, count in before.items()}
        for limits, now in items:
            win = now // RATE_WINDOW
            if all(used[(bucket, win)] < per_minute for bucket, per_minute in limits):
                for bucket, _ in limits:
                    used[(bucket, win)] += 1
                waits.append(0)
            else:
                waits.append(RATE_WINDOW - now % RATE_WINDOW)
        changed = [(b, w, u) for (b, w), u in used.items() if u != before[(b, w)]]
        if changed:
            tx.execute("UPDATE rate SET used = v.u FROM json_to_recordset(?::json) AS "
                       "v(b text, w bigint, u bigint) WHERE rate.bucket = v.b AND "
                       "rate.win = v.w", (_json_rows(("b", "w", "u"), changed),))
    return waits


class _Full(Exception):
    """Rolls back ``take_rate`` when one of its buckets is full."""


class _Replayed(Exception):
    """Rolls back ``accept`` when the inbox already holds the message (its replay row aged out)."""


def door_namespace(did: str) -> str:
    """The PostgreSQL schema of an identity's door store: ``door_<key>``."""
    return "door_" + db_path(did).stem


def open_door_store(did: str, target: str | None = None, *, durable: bool = False,
                    fix: str = "muretai db {verb} --db URL --as NAME") -> DoorStore:
    """The identity's store: its SQLite file (``target`` None or a path; created and upgraded
    as needed) or its schema in a PostgreSQL database (``postgresql://…``), which must
    already be at this program's schema version (``fix`` names the command that makes it so).
    """
    from muretai_cli.db import is_postgres_url, open_database, require

    if target is None or not is_postgres_url(target):
        return DoorStore(Path(target) if target else db_path(did), durable=durable)
    db = open_database(target, namespace=door_namespace(did))
    try:
        require(db, door_schema(), fix=fix)
    except BaseException:
        db.close()
        raise
    return DoorStore(db)
