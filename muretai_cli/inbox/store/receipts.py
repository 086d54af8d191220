"""Receipts and replay: what the door and a drain commit of a verified message (the inbox
row, the replay row, the sender's relay, the drained deposit) and the reads before it."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import Refused
from muretai_cli.inbox.store.introductions import record_introduced
from muretai_cli.inbox.store.rates import Rates
from muretai_cli.inbox.store.windows import RATE_WINDOW, REPLAY_WINDOW, Limits

if TYPE_CHECKING:
    from muretai_cli.db import Database, Tx
    from muretai_cli.inbox.arrival import Arrival

__all__ = ["HELD_PER_SENDER", "HELD_PER_SENDER_CHARS", "HELD_TOTAL", "HELD_TOTAL_CHARS",
           "REPLAY_WINDOW", "Receipts"]

# What strangers can make this identity keep before its owner decides (docs/door.md):
HELD_PER_SENDER = 20  # messages kept of one held sender; later ones answered, not kept
HELD_PER_SENDER_CHARS = 256 * 1024  # characters of text kept of one held sender
HELD_TOTAL = 1000  # messages held in all; past it a new stranger is refused (held-full)
HELD_TOTAL_CHARS = 8 * 1024 * 1024  # characters of text held in all
HELD_LIMIT_DETAIL = "the sender's held messages are at the limit; this one was not kept"

# A received message's inbox row (``accept``): None when the inbox holds it already.
_INBOX_INSERT = ("INSERT INTO inbox (sender, message_id, context_id, text, sent, received, "
                 "verified, sig, via, channel, reply_to, relay, reply, wba) "
                 "VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?) "
                 "ON CONFLICT (sender, message_id) DO NOTHING RETURNING id")


class _Replayed(Exception):
    """Rolls back ``accept`` when the inbox already holds the message (its replay row aged out)."""


class Receipts(Rates):
    """The ``replay``, ``inbox`` (as written), ``peers`` and ``relayed`` (as written) tables."""

    def lookup(self, message_id: str, sender: str, now: int) -> tuple[bool, str | None]:
        """One read for the ladder: (messageId seen in the window, the sender's status).

        Read-only, so it may run before the signature: nothing a stranger sends is written.
        """
        row = self.db.one(
            "SELECT EXISTS (SELECT 1 FROM replay WHERE message_id=? AND seen>=?), "
            "(SELECT status FROM senders WHERE did=?)",
            (message_id, now - REPLAY_WINDOW, sender))
        return (bool(row[0]), row[1]) if row else (False, None)

    def accept(self, arrival: Arrival, now: int) -> bool:
        """Commit a verified message to the inbox and replay memory. False if a replay.

        Not exclusive: the unique keys decide. Two processes racing with one ``messageId``
        both insert its replay row; the database lets one commit and the other finds it.
        The ``Arrival`` carries its ``channel`` (door | relay), a proved ``reply_to``, the
        ``relay`` the sender named, the signed ``reply`` given, and a relayed message's
        ``deposit_id`` (recorded in the same transaction, so a redelivery is recognised).
        """
        channel = arrival.channel
        if self.bulk.takes(arrival):
            return self.lookup_and_accept((), [(arrival, now, ())])[1][0][0]
        row = (arrival.sender, arrival.message_id, arrival.context_id, arrival.text,
               arrival.timestamp, now, arrival.sig,
               "direct" if channel == "door" else channel, channel, arrival.reply_to,
               arrival.relay, arrival.reply, arrival.wba)
        if channel != "door" and self._batched:
            # A drain's listen answer is ONE transaction (``batch``) that any failure rolls
            # back whole (turn-check lets database errors through), and nothing is written
            # when the inbox holds the message already: no savepoint per message.
            if not self.db.all(_INBOX_INSERT, row):
                return False
            self._after_receipt(self.db, arrival, "accepted", None, now)
            return True
        try:
            with self.db.transaction(exclusive=False) as tx:
                if channel == "door" and not tx.all(
                        "INSERT INTO replay (message_id, seen) VALUES (?, ?) "
                        "ON CONFLICT (message_id) DO NOTHING RETURNING message_id",
                        (arrival.message_id, now)):
                    return False
                if not tx.all(_INBOX_INSERT, row):
                    raise _Replayed
                self._after_receipt(tx, arrival, "accepted", None, now)
        except _Replayed:
            return False
        return True

    def lookup_and_accept(self, lookups: Sequence[tuple[str, str, int]],
                          accepts: Sequence[tuple[Arrival, int, Limits]]
                          ) -> tuple[list[tuple[bool, str | None]], list[tuple[bool, int]]]:
        """Many ``lookup(message_id, sender, now)``, and many accepts of a verified message
        ``(arrival, now, limits)``, at once: their results, in order (the door's group commit on
        PostgreSQL). An accept's result is ``(accepted, wait)``: ``wait`` > 0 when one of its
        rate ``limits`` (``take_rate``'s) refused it (nothing written for it), else whether
        it was accepted (False: a replay).

        With ``json_batches`` (``bulk.JsonBatches``) all lookups are one statement (a read)
        and the accepts of messages the door took (``channel`` door) one more, a transaction
        of its own: every accept of the batch commits or none does (an exception: nothing
        committed). Rate limits are counted just before it (``bulk.count_rates``, waiting
        for no flush): as with
        ``take_rate``, a request counted is not given back if its commit then fails. Within
        the batch a ``messageId`` is accepted once: the first copy the rates admit is
        written, every later copy is a replay (False) without reaching the database. Rows
        go in ``messageId`` order, so batches racing in several processes take their key
        locks in one order (no deadlock). Any other message, and every one on SQLite, is
        taken in turn (``take_rate``, then ``accept``, each its own transaction).
        """
        return self.bulk.lookup_and_accept(self, lookups, accepts)

    def _take_and_accept(self, arrival: Arrival, now: int, limits: Limits
                         ) -> tuple[bool, int]:
        """``take_rate`` then ``accept``, one after the other: ``(accepted, wait)``."""
        wait = self.take_rate(limits, now) if limits else 0
        return (False, wait) if wait else (self.accept(arrival, now), 0)

    def _after_receipt(self, tx: Tx | Database, arrival: Arrival, outcome: str,
                       request_id: str | None, now: int) -> None:
        if arrival.introduced is not None and outcome == "accepted":
            record_introduced(tx, arrival.introduced, now)
        if arrival.relay:
            tx.execute("INSERT INTO peers (did, relay, updated) VALUES (?, ?, ?) "
                       "ON CONFLICT (did) DO UPDATE SET relay=excluded.relay, "
                       "updated=excluded.updated", (arrival.sender, arrival.relay, now))
        if arrival.deposit_id is not None:
            tx.execute("INSERT INTO relayed (sender, deposit_id, message_id, outcome, "
                       "request_id, at) VALUES (?, ?, ?, ?, ?, ?)",
                       (arrival.sender, arrival.deposit_id, arrival.message_id, outcome,
                        request_id, now))


    def kept_reply(self, arrival: Arrival) -> dict[str, Any] | None:
        """The signed reply the door gave this exact message (same six fields, same sig);
        None for anything that differs, or that the door did not accept."""
        row = self.db.one("SELECT context_id, text, sent, sig, reply FROM inbox WHERE "
                          "sender=? AND message_id=? AND channel='door'",
                          (arrival.sender, arrival.message_id))
        if row is None or row[4] is None:
            return None
        if (row[0], row[1], row[2], row[3]) != (arrival.context_id, arrival.text,
                                                arrival.timestamp, arrival.sig):
            return None
        reply: dict[str, Any] = json.loads(row[4])
        return reply

    def keep_reply(self, sender: str, message_id: str, reply: str) -> None:
        """Keep ``reply`` (signed JSON) as the answer to a message the door accepted, in
        place of the receipt (``serve --on-message``): an exact repeat is given it."""
        with self.db.transaction(exclusive=False) as tx:
            tx.execute("UPDATE inbox SET reply=? WHERE sender=? AND message_id=? AND "
                       "channel='door'", (reply, sender, message_id))

    def hold(self, arrival: Arrival, now: int, *, vouch: str | None = None) -> str | None:
        """Hold a message for the owner's decision; returns the sender's request id (the
        first held one: one request per stranger, whichever process held it), None for a
        replay. A sender awaiting a decision has its messages kept, each in its own row, in
        order (with ``vouch``, the gate's JSON verdict on its introduction), up to
        ``HELD_PER_SENDER`` messages and ``HELD_PER_SENDER_CHARS`` characters
        of text; later ones are answered with the same request id and not kept (a relayed
        one is recorded refused, ``held-limit``). Approving or rejecting one decides them
        all. A new stranger past ``HELD_TOTAL`` / ``HELD_TOTAL_CHARS`` held in all is not
        held: ``Refused`` ``held-full``, nothing written. One exclusive transaction, so the
        bounds hold over every process serving the identity.
        """
        channel = arrival.channel
        with self.db.transaction() as tx:
            if channel == "door":
                if not tx.all("INSERT INTO replay (message_id, seen) VALUES (?, ?) "
                              "ON CONFLICT (message_id) DO NOTHING RETURNING message_id",
                              (arrival.message_id, now)):
                    return None
            elif tx.one("SELECT 1 FROM requests WHERE sender=? AND message_id=?",
                        (arrival.sender, arrival.message_id)):
                return None
            first = tx.one("SELECT id FROM requests WHERE sender=? AND status='held' "
                           "ORDER BY seq LIMIT 1", (arrival.sender,))
            if first is not None and not self._room_for(tx, arrival):
                if arrival.deposit_id is not None:
                    tx.execute("INSERT INTO relayed (sender, deposit_id, message_id, outcome, "
                               "reason, detail, at) VALUES (?, ?, ?, 'refused', "
                               "'held-limit', ?, ?) ON CONFLICT (sender, deposit_id) DO "
                               "NOTHING", (arrival.sender, arrival.deposit_id,
                                           arrival.message_id, HELD_LIMIT_DETAIL, now))
                return str(first[0])
            if first is None and not self._room_in_all(tx, arrival):
                raise Refused("held-full", "this identity holds as many first contacts as "
                                           "it keeps until its owner decides")
            request_id = f"r-{secrets.token_hex(8)}"
            tx.execute("INSERT INTO requests (id, sender, message_id, context_id, text, sent, "
                       "received, sig, channel, reply_to, relay, wba, seq) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                       "(SELECT COALESCE(MAX(seq), 0) + 1 FROM requests))",
                       (request_id, arrival.sender, arrival.message_id, arrival.context_id,
                        arrival.text, arrival.timestamp, now, arrival.sig, channel,
                        arrival.reply_to, arrival.relay, arrival.wba))
            if vouch is not None:
                tx.execute("INSERT INTO held_vouches (request_id, vouch) VALUES (?, ?)",
                           (request_id, vouch))
            self._after_receipt(tx, arrival, "held", request_id, now)
            return str(first[0]) if first else request_id

    @classmethod
    def _room_for(cls, tx: Tx, arrival: Arrival) -> bool:
        """Whether a held sender may have one more message kept: its own bounds, and all's."""
        count, chars = tx.one("SELECT COUNT(*), COALESCE(SUM(LENGTH(text)), 0) FROM requests "
                              "WHERE sender=? AND status='held'", (arrival.sender,)) or (0, 0)
        return bool(count < HELD_PER_SENDER
                    and int(chars) + len(arrival.text) <= HELD_PER_SENDER_CHARS
                    and cls._room_in_all(tx, arrival))

    @staticmethod
    def _room_in_all(tx: Tx, arrival: Arrival) -> bool:
        """Whether every stranger's held messages together have room for one more."""
        count, chars = tx.one("SELECT COUNT(*), COALESCE(SUM(LENGTH(text)), 0) FROM requests "
                              "WHERE status='held'") or (0, 0)
        return bool(count < HELD_TOTAL and int(chars) + len(arrival.text) <= HELD_TOTAL_CHARS)

    def prune(self, now: int) -> None:
        self.db.execute("DELETE FROM replay WHERE seen < ?", (now - REPLAY_WINDOW,))
        self.db.execute("DELETE FROM rate WHERE win < ?", (now // RATE_WINDOW - 1,))


    def relayed_lookup(self, sender: str, message_id: str) -> tuple[bool, str | None]:
        """One read for a relayed message: (its ``(sender, messageId)`` is already in the
        inbox or held, the sender's status) -- a drain asks both of every message."""
        row = self.db.one(
            "SELECT EXISTS (SELECT 1 FROM inbox WHERE sender=? AND message_id=?) OR EXISTS "
            "(SELECT 1 FROM requests WHERE sender=? AND message_id=?), "
            "(SELECT status FROM senders WHERE did=?)",
            (sender, message_id, sender, message_id, sender))
        return (bool(row[0]), row[1]) if row else (False, None)

