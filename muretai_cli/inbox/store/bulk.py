"""How a batch of the door's lookups, commits and rate counts reaches the database, chosen
once per store by what the database declares (``Database.json_batches``):

- ``InTurn``: each call in turn, its own transaction (SQLite, and any engine without it);
- ``JsonBatches``: a whole batch as one statement over one JSON parameter (PostgreSQL's
  ``json_to_recordset``): the door's group commit. All the engine-specific SQL is here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from muretai_cli.inbox.store.windows import RATE_WINDOW, REPLAY_WINDOW, Limits

if TYPE_CHECKING:
    from muretai_cli.db import Database
    from muretai_cli.inbox.arrival import Arrival
    from muretai_cli.inbox.store.rates import Rates
    from muretai_cli.inbox.store.receipts import Receipts

__all__ = ["Bulk", "InTurn", "JsonBatches", "count_rates"]

Looked = list[tuple[bool, str | None]]
Accepted = list[tuple[bool, int]]


class Bulk(Protocol):
    def takes(self, arrival: Arrival) -> bool:
        """Whether ``accept`` of this message goes through ``lookup_and_accept``."""
        ...

    def lookup_and_accept(self, store: Receipts, lookups: Sequence[tuple[str, str, int]],
                          accepts: Sequence[tuple[Arrival, int, Limits]]
                          ) -> tuple[Looked, Accepted]: ...

    def take_rates(self, store: Rates, items: Sequence[tuple[Limits, int]]) -> list[int]: ...


class InTurn:
    """Every lookup, accept and count in turn, each its own transaction."""

    def takes(self, arrival: Arrival) -> bool:
        return False

    def lookup_and_accept(self, store: Receipts, lookups: Sequence[tuple[str, str, int]],
                          accepts: Sequence[tuple[Arrival, int, Limits]]
                          ) -> tuple[Looked, Accepted]:
        return ([store.lookup(*item) for item in lookups],
                [store._take_and_accept(a, now, limits) for a, now, limits in accepts])

    def take_rates(self, store: Rates, items: Sequence[tuple[Limits, int]]) -> list[int]:
        return [store.take_rate(limits, now) for limits, now in items]


class JsonBatches:
    """A batch as one statement a kind (see ``Receipts.lookup_and_accept``)."""

    def takes(self, arrival: Arrival) -> bool:
        return _door_taken(arrival)

    def lookup_and_accept(self, store: Receipts, lookups: Sequence[tuple[str, str, int]],
                          accepts: Sequence[tuple[Arrival, int, Limits]]
                          ) -> tuple[Looked, Accepted]:
        db = store.db
        batched = [i for i, (arrival, _, _) in enumerate(accepts) if _door_taken(arrival)]
        counted = [i for i in batched if accepts[i][2]]
        waits = dict.fromkeys(range(len(accepts)), 0)
        if counted:
            # counted first, without waiting for a disk flush (the rate table is unlogged):
            # the buckets' locks (the door's total is one row every process updates) are
            # held for a statement, not across the commit's flush
            for i, wait in zip(counted, count_rates(
                    db, [(accepts[i][2], accepts[i][1]) for i in counted]), strict=True):
                waits[i] = wait
        first = _first_copies(accepts, [i for i in batched if not waits[i]])
        statements = ([_lookup_statement(lookups)] if lookups else []) + (
            [_accept_statement(accepts, first)] if first else [])
        results = db.execute_each(statements) if statements else []
        looked_rows = results[0].rows if lookups else []
        taken_rows = results[-1].rows if first else []
        looked = [(bool(seen), status) for seen, status in looked_rows]
        taken = {row[0] for row in taken_rows}
        results_by_index: dict[int, tuple[bool, int]] = {
            i: (False, waits[i]) if waits[i] else (accepts[i][0].message_id in taken and
                                                   first.get(accepts[i][0].message_id) == i,
                                                   0)
            for i in batched}
        return looked, [results_by_index[i] if i in results_by_index
                        else store._take_and_accept(a, now, limits)
                        for i, (a, now, limits) in enumerate(accepts)]

    def take_rates(self, store: Rates, items: Sequence[tuple[Limits, int]]) -> list[int]:
        return count_rates(store.db, items)


_ACCEPT_COLUMNS = ("message_id", "sender", "context_id", "text", "sent", "received", "sig",
                   "reply_to", "relay", "reply", "wba")


def _json_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as one JSON parameter (``db.json_rows``, shared with the relay's store)."""
    from muretai_cli.db import json_rows

    return json_rows(columns, rows)


def _door_taken(arrival: Arrival) -> bool:
    """A message the door took itself (not drained from a relay): what the door's group
    commit writes for a whole batch in one statement (``_accept_statement``). A first
    contact admitted on an introduction is taken in turn (``accept``: its record and the
    message in one transaction)."""
    return arrival.channel == "door" and arrival.introduced is None


def _first_copies(accepts: Sequence[tuple[Arrival, int, Limits]],
                  indexes: Sequence[int]) -> dict[str, int]:
    """messageId -> the index of its first copy among ``indexes`` (the copies written)."""
    first: dict[str, int] = {}
    for index in indexes:
        first.setdefault(accepts[index][0].message_id, index)
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


def _accept_statement(accepts: Sequence[tuple[Arrival, int, Limits]],
                      first: dict[str, int]) -> tuple[str, tuple[str]]:
    """One statement that accepts the messages ``first`` names: their replay rows, their
    inbox rows and, for those that named a relay, the sender's ``peers`` row; it returns
    the messageIds accepted (a taken one is a replay). Rows go in messageId order (peers
    in sender order, one per sender), so racing batches take their locks in one order."""
    rows = [(a.message_id, a.sender, a.context_id, a.text, a.timestamp, now, a.sig,
             a.reply_to, a.relay or None, a.reply, a.wba)
            for a, now, _ in (accepts[first[k]] for k in sorted(first))]
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


def count_rates(db: Database, items: Sequence[tuple[Limits, int]]) -> list[int]:
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

