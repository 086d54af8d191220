"""Invites an identity issued, and the contacts invites made, in the identity's own database.

Tables of the identity's door store (``IdentityStore``, whose schema creates them: version 5),
on its SQLite file or PostgreSQL schema alike. All their SQL is here.

    invites   nonce, the signed card, uses, used, exp, created, revoked
    claims    one row per (nonce, joiner): what counts a use (a retried claim counts once)
    contacts  did, the name it gave (its own words), relay, enc_pub, url, since, how

A use is spent in one exclusive transaction, so two claims racing for the last use cannot
both win. A contact is inserted, never overwritten: a claim never changes the relay or
``enc_pub`` of someone already known.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import InputError, Refused
from muretai_cli.inbox.store.uses import Uses, spend_use

if TYPE_CHECKING:
    from muretai_cli.db import Database, Tx

# The door schema's version 5 (``inbox.store.door_schema``). ``IF NOT EXISTS``: a database
# written by an earlier release already holds these tables (they were created apart then).
INVITE_TABLES = """
CREATE TABLE IF NOT EXISTS invites (
  nonce TEXT PRIMARY KEY, card TEXT NOT NULL, uses {int} NOT NULL, used {int} NOT NULL DEFAULT 0,
  exp {int} NOT NULL, created {int} NOT NULL, revoked {int});
CREATE TABLE IF NOT EXISTS invite_claims (
  nonce TEXT NOT NULL, joiner TEXT NOT NULL, at {int} NOT NULL, PRIMARY KEY (nonce, joiner));
CREATE TABLE IF NOT EXISTS contacts (
  did TEXT PRIMARY KEY, name TEXT NOT NULL, relay TEXT, enc_pub TEXT, url TEXT,
  since {int} NOT NULL, how TEXT NOT NULL)
"""


INVITE_USES = Uses(
    "SELECT uses, used, exp, revoked FROM invites WHERE nonce=?",
    "SELECT 1 FROM invite_claims WHERE nonce=? AND joiner=?",
    "UPDATE invites SET used=used+1 WHERE nonce=?",
    "INSERT INTO invite_claims (nonce, joiner, at) VALUES (?, ?, ?)", {
    "unknown": ("unknown-nonce", "no invite with that nonce was issued here"),
    "revoked": ("revoked-invite", "the invite was revoked"),
    "expired": ("expired-invite", "the invite has expired"),
    "used-up": ("invite-used-up", "the invite has no uses left")})


@dataclass(frozen=True, slots=True)
class InviteRow:
    nonce: str
    card: dict[str, Any]
    uses: int
    used: int
    exp: int
    created: int
    revoked: int | None

    def state(self, now: int) -> str:
        if self.revoked is not None:
            return "revoked"
        if self.exp <= now:
            return "expired"
        return "used-up" if self.used >= self.uses else "live"

    def to_json(self, now: int) -> dict[str, Any]:
        return {"nonce": self.nonce, "uses": self.uses, "usesLeft": max(0, self.uses - self.used),
                "exp": self.exp, "created": self.created, "revoked": self.revoked,
                "state": self.state(now), "name": self.card.get("name")}


@dataclass(frozen=True, slots=True)
class Contact:
    did: str
    name: str
    relay: str | None
    enc_pub: str | None
    url: str | None
    since: int
    how: str

    def to_json(self) -> dict[str, Any]:
        return {"did": self.did, "name": self.name, "relay": self.relay, "encPub": self.enc_pub,
                "url": self.url, "since": self.since, "how": self.how}


class InviteStore:
    """The invites, claims and contacts of one identity, on its door store's database
    (``IdentityStore.db``: its schema holds these tables)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def add(self, card: dict[str, Any], *, uses: int, exp: int, now: int) -> InviteRow:
        if isinstance(uses, bool) or not isinstance(uses, int) or uses < 1:
            raise InputError("bad-uses", "--uses is a whole number of at least 1")
        with self.db.transaction() as tx:
            tx.execute("INSERT INTO invites (nonce, card, uses, exp, created) "
                       "VALUES (?, ?, ?, ?, ?)",
                       (card["nonce"], json.dumps(card, sort_keys=True), uses, exp, now))
        return InviteRow(card["nonce"], card, uses, 0, exp, now, None)

    def _of(self, row: tuple[Any, ...]) -> InviteRow:
        return InviteRow(row[0], json.loads(row[1]), row[2], row[3], row[4], row[5], row[6])

    def invites(self) -> list[InviteRow]:
        return [self._of(r) for r in self.db.all(
            "SELECT nonce, card, uses, used, exp, created, revoked FROM invites "
            "ORDER BY created DESC, nonce")]

    def revoke(self, nonce: str, now: int) -> InviteRow:
        with self.db.transaction() as tx:
            tx.execute("UPDATE invites SET revoked=? WHERE nonce=? AND revoked IS NULL",
                       (now, nonce))
            row = tx.one("SELECT nonce, card, uses, used, exp, created, revoked FROM invites "
                         "WHERE nonce=?", (nonce,))
        if row is None:
            raise InputError("no-such-invite", f"no invite with nonce {nonce[:64]!r}",
                             hint="list them with `muretai invite list --as NAME`")
        return self._of(row)

    def redeem(self, nonce: str, joiner: Contact, now: int,
               admit: Callable[[Tx], None] | None = None, *,
               valid_at: int | None = None) -> bool:
        """Spend one use of ``nonce`` for ``joiner``, record the joiner as a contact and run
        ``admit`` (the door store's ``admit_joiner``: blocked, or now an allowed sender), all
        in one exclusive transaction; returns whether the contact is new. A joiner claiming
        the same invite again spends nothing more. ``Refused``: what ``admit`` raises, then
        ``unknown-nonce``, ``revoked-invite``, ``expired-invite`` (at ``valid_at``, default
        ``now``), ``invite-used-up``, ``reclaim-addresses-differ`` (the joiner claimed it
        before, and the addresses it gives now are not the contact's)."""
        with self.db.transaction() as tx:
            if admit is not None:
                admit(tx)
            if not spend_use(tx, INVITE_USES, nonce, joiner.did, now, valid_at).now:
                self._same_addresses(tx, joiner)  # a re-claim: refused if it would redirect
            return self._insert_contact(tx, joiner)

    @staticmethod
    def _same_addresses(tx: Tx, joiner: Contact) -> None:
        """A joiner claiming again a nonce it spent: the contact is kept as it was, so a
        re-claim naming another relay, ``enc_pub`` or URL is refused, not reported joined."""
        kept = tx.one("SELECT relay, enc_pub, url FROM contacts WHERE did=?", (joiner.did,))
        if kept is not None and tuple(kept) != (joiner.relay, joiner.enc_pub, joiner.url):
            raise Refused("reclaim-addresses-differ", "this joiner already claimed this invite "
                                                      "with another relay, enc_pub or URL; "
                                                      "the contact is kept as it was")

    def _insert_contact(self, tx: Tx, contact: Contact) -> bool:
        from muretai_cli.inbox.store.contacts import learn_reach, touch_contact

        new = bool(tx.all(
            "INSERT INTO contacts (did, name, relay, enc_pub, url, since, how) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (did) DO NOTHING RETURNING did",
            (contact.did, contact.name, contact.relay, contact.enc_pub, contact.url,
             contact.since, contact.how)))
        # The contact book learns how to reach a new one: the addresses its signed invite
        # or claim gave (never the name it gave: that is its own words, kept here only).
        if new:
            learn_reach(tx, contact.did, source="invite", now=contact.since,
                        door=contact.url, relay=contact.relay, enc_pub=contact.enc_pub)
        else:
            touch_contact(tx, contact.did, "invite", contact.since)
        return new

    def add_contact(self, contact: Contact) -> bool:
        """Record a contact unless one is known for that DID (never overwritten)."""
        with self.db.transaction() as tx:
            return self._insert_contact(tx, contact)

    def contact(self, did: str) -> Contact | None:
        row = self.db.one("SELECT did, name, relay, enc_pub, url, since, how FROM contacts "
                          "WHERE did=?", (did,))
        return Contact(*row) if row else None

    def contacts(self) -> list[Contact]:
        return [Contact(*r) for r in self.db.all(
            "SELECT did, name, relay, enc_pub, url, since, how FROM contacts ORDER BY since, did")]
