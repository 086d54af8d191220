"""The contact book's tables: one row per peer (``contact_book``: the owner's name for it,
how it is reached and where each fact came from, first and last seen) and each way it
came (``contact_sources``). A reach written here is verified: a door URL or a relay and
``enc_pub`` from a card, invite or claim that verified under the peer's DID, or the
endpoint that answered as that DID. A name is the owner's, never a peer's.

The functions over a ``Tx`` let another table group record a contact inside its own
transaction (an invite's claim, a join)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from muretai_cli.errors import Refused

if TYPE_CHECKING:
    from muretai_cli.db import Database, Row, Tx

__all__ = ["SOURCES", "BookRow", "Contacts", "Source", "learn_reach", "touch_contact"]

# Where a contact, or a fact about it, came from.
Source = Literal["card", "invite", "grant", "approval", "exchange", "owner"]
SOURCES: tuple[Source, ...] = ("card", "invite", "grant", "approval", "exchange", "owner")

_ROW = ("SELECT did, name, door, door_from, relay, enc_pub, relay_from, first_seen, "
        "last_seen FROM contact_book")


@dataclass(frozen=True, slots=True)
class BookRow:
    did: str
    name: str | None
    door: str | None
    door_from: str | None
    relay: str | None
    enc_pub: str | None
    relay_from: str | None
    first_seen: int
    last_seen: int


def _row(row: Row) -> BookRow:
    text = [None if v is None else str(v) for v in row[1:7]]
    return BookRow(str(row[0]), text[0], text[1], text[2], text[3], text[4], text[5],
                   int(row[7]), int(row[8]))


def touch_contact(tx: Tx, did: str, source: Source, now: int) -> None:
    """Record that ``did`` came (again) by ``source`` at ``now``."""
    tx.execute("INSERT INTO contact_book (did, first_seen, last_seen) VALUES (?, ?, ?) "
               "ON CONFLICT (did) DO UPDATE SET last_seen=excluded.last_seen", (did, now, now))
    tx.execute("INSERT INTO contact_sources (did, source, first_seen, last_seen) "
               "VALUES (?, ?, ?, ?) ON CONFLICT (did, source) DO UPDATE SET "
               "last_seen=excluded.last_seen", (did, source, now, now))


def learn_reach(tx: Tx, did: str, *, source: Source, now: int, door: str | None = None,
                relay: str | None = None, enc_pub: str | None = None) -> None:
    """Record how ``did`` is reached, as a verified ``source`` said: a door URL, or a relay
    with its ``enc_pub`` (a relay alone is no way to write to anyone)."""
    touch_contact(tx, did, source, now)
    if door:
        tx.execute("UPDATE contact_book SET door=?, door_from=? WHERE did=?",
                   (door, source, did))
    if relay and enc_pub:
        tx.execute("UPDATE contact_book SET relay=?, enc_pub=?, relay_from=? WHERE did=?",
                   (relay, enc_pub, source, did))


class Contacts:
    """The contact book as rows (``inbox.contacts.ContactBook`` is its one reader). A
    table group of ``IdentityStore`` (which gives it ``db``); it imports no other, so the
    invite tables can record a contact in their own transaction."""

    db: Database

    def book_row(self, did: str) -> BookRow | None:
        row = self.db.one(f"{_ROW} WHERE did=?", (did,))
        return _row(row) if row else None

    def book_rows(self) -> list[BookRow]:
        return [_row(r) for r in self.db.all(f"{_ROW} ORDER BY did")]

    def book_named(self, name: str) -> BookRow | None:
        row = self.db.one(f"{_ROW} WHERE name_key=?", (name.casefold(),))
        return _row(row) if row else None

    def book_sources(self) -> dict[str, dict[str, tuple[int, int]]]:
        """Each contact's sources with first and last seen: those recorded, and those the
        other tables prove (a grant redeemed at this door, an approval, a verified message
        either way), so a contact made before the book is in it too."""
        out: dict[str, dict[str, tuple[int, int]]] = {}

        def add(rows: list[Row], source: str) -> None:
            for did, first, last in rows:
                have = out.setdefault(str(did), {}).get(source)
                lo, hi = int(first), int(last)
                out[str(did)][source] = (min(lo, have[0]), max(hi, have[1])) if have else (lo, hi)

        for did, source, first, last in self.db.all(
                "SELECT did, source, first_seen, last_seen FROM contact_sources"):
            out.setdefault(str(did), {})[str(source)] = (int(first), int(last))
        add(self.db.all("SELECT sender, MIN(opened), MAX(opened) FROM connections "
                        "GROUP BY sender"), "grant")
        add(self.db.all("SELECT did, since, since FROM senders WHERE status='approved'"),
            "approval")
        add(self.db.all("SELECT sender, MIN(received), MAX(received) FROM inbox "
                        "WHERE verified=1 GROUP BY sender"), "exchange")
        add(self.db.all("SELECT peer, MIN(sent), MAX(sent) FROM sent WHERE "
                        "state='delivered' GROUP BY peer"), "exchange")
        return out

    def learn_reach(self, did: str, *, source: Source, now: int, door: str | None = None,
                    relay: str | None = None, enc_pub: str | None = None) -> None:
        with self.db.transaction() as tx:
            learn_reach(tx, did, source=source, now=now, door=door, relay=relay,
                        enc_pub=enc_pub)

    def touch_contact(self, did: str, source: Source, now: int) -> None:
        with self.db.transaction() as tx:
            touch_contact(tx, did, source, now)

    def name_contact(self, did: str, name: str, now: int) -> bool:
        """Give ``did`` the owner's ``name`` (replacing the one it had); whether it changed.
        ``Refused`` ``name-taken`` when another contact has that name (case-insensitive)."""
        key = name.casefold()
        with self.db.transaction() as tx:
            holder = tx.one("SELECT did FROM contact_book WHERE name_key=?", (key,))
            if holder is not None and str(holder[0]) != did:
                raise Refused("name-taken", f"the name {name!r} already stands for "
                                            f"{holder[0]}; a name stands for one DID",
                              hint=f"unname it first: `muretai op contact unname {name}`")
            touch_contact(tx, did, "owner", now)
            old = tx.one("SELECT name FROM contact_book WHERE did=?", (did,))
            tx.execute("UPDATE contact_book SET name=?, name_key=? WHERE did=?",
                       (name, key, did))
        return old is None or old[0] != name

    def unname_contact(self, name: str) -> str | None:
        """Take the owner's ``name`` off its contact; the DID it stood for (None: no such)."""
        with self.db.transaction() as tx:
            holder = tx.one("SELECT did FROM contact_book WHERE name_key=?", (name.casefold(),))
            if holder is None:
                return None
            tx.execute("UPDATE contact_book SET name=NULL, name_key=NULL WHERE did=?",
                       (holder[0],))
        return str(holder[0])
