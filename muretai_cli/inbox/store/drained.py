"""Relay deposits drained by turn-check: each one's outcome, and whether it was shown yet
(``NEW``, ``SHOWING`` while a turn-check prints it, ``SHOWN``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from muretai_cli.inbox.store.timeline import Timeline

__all__ = ["NEW", "SHOWING", "SHOWN", "UNSHOWN", "Drained"]

# relayed.shown: drained, not printed yet | claimed by a turn-check printing it | printed
NEW, SHOWN, SHOWING = 0, 1, 2
# Which relayed deposits are committed, 100 (sender, deposit id) pairs to a statement.
_SEEN_CHUNK = 100
_SEEN_SQL = ("SELECT sender, deposit_id FROM relayed WHERE "  # noqa: S608 - only "?"s
             + " OR ".join(["(sender=? AND deposit_id=?)"] * _SEEN_CHUNK))
# What turn-check has not shown yet, oldest first (through the index ``relayed_shown``).
_RELAYED_ITEM = "id, sender, deposit_id, message_id, outcome, reason, detail, request_id, at"
UNSHOWN = f"SELECT {_RELAYED_ITEM} FROM relayed WHERE shown=? ORDER BY id"  # noqa: S608


class Drained(Timeline):
    """The ``relayed`` table (as read and shown)."""

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

    def record_vouch(self, sender: str, deposit_id: str, code: str, detail: str,
                     now: int) -> None:
        """A deposit that was an introduction proposal held for review (``proposed``, its
        review id) or an answer to one of ours (``answered``, the decision)."""
        self.db.execute("INSERT INTO relayed (sender, deposit_id, outcome, reason, detail, at) "
                        "VALUES (?, ?, 'vouch', ?, ?, ?) ON CONFLICT (sender, deposit_id) "
                        "DO NOTHING", (sender, deposit_id, code, detail, now))

    def _relayed_items(self, rows: list[Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for rid, sender, deposit, mid, outcome, reason, detail, request_id, at in rows:
            item: dict[str, Any] = {"row": rid, "from": sender, "depositId": deposit,
                                    "outcome": outcome, "at": at}
            if outcome in ("refused", "joined", "vouch"):
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
