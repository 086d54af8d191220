"""One contact book per identity: every peer it knows, the owner's name for it, how it is
reached (a door URL, or a relay and ``enc_pub``) and where each fact came from (card,
invite, grant, approval, exchange, owner); first and last seen.

It is read and written here only (``op dm``, ``join``, ``turn-check`` through the invite
tables, ``op connections``, the MCP server). A reach comes only from something that
verified under the peer's DID: a card, a signed invite or claim, or a door that answered
as that DID. An unsigned hint (a message's ``metadata.relay``) is only a place to look
(``visit.send`` checks the card there before it is learned). A name is the owner's, never
taken from what a peer says about itself; one name stands for one DID, and never shadows
one of the owner's identities or trusted orgs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import InputError, Refused
from muretai_cli.seam._limits import MAX_CONTACT_NAME

if TYPE_CHECKING:
    from muretai_cli.home import Connection, ConnectionStore
    from muretai_cli.inbox.store import BookRow, IdentityStore, Source

__all__ = ["Contact", "ContactBook", "check_contact_name"]

_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_CONTACT_NAME - 1}}}")


def check_contact_name(name: str) -> str:
    """A name for a peer: 1-64 of ``A-Z a-z 0-9 . _ -``, starting with a letter or digit
    (so never a DID, never a control character); else ``InputError`` ``bad-contact-name``."""
    if not _NAME.fullmatch(name):
        shown = name.encode("ascii", "backslashreplace").decode("ascii")[:80]
        raise InputError("bad-contact-name", f"{shown!r} is not a name for a contact",
                         hint=f"use 1-{MAX_CONTACT_NAME} characters from A-Z a-z 0-9 . _ -, "
                              "starting with a letter or digit")
    return name


@dataclass(frozen=True, slots=True)
class Contact:
    """One peer of the book: what the owner calls it, how to reach it, and whence."""

    did: str
    name: str | None = None
    door: str | None = None
    door_from: str | None = None
    relay: str | None = None
    enc_pub: str | None = None
    relay_from: str | None = None
    sources: dict[str, tuple[int, int]] = field(default_factory=dict)
    connection: Connection | None = None  # the door this identity wrote to and heard from

    @property
    def reached_by(self) -> str | None:
        if self.door or self.connection is not None:
            return "door"
        return "relay" if self.relay and self.enc_pub else None

    @property
    def first_seen(self) -> int | None:
        return min((f for f, _ in self.sources.values()), default=None)

    @property
    def last_seen(self) -> int | None:
        return max((la for _, la in self.sources.values()), default=None)

    def to_json(self) -> dict[str, Any]:
        door = self.connection.endpoint if self.connection is not None else self.door
        door_from = "exchange" if self.connection is not None else self.door_from
        reach: dict[str, Any] | None = None
        if door or (self.relay and self.enc_pub):
            reach = {"door": door, "doorFrom": door_from if door else None,
                     "relay": self.relay if self.enc_pub else None,
                     "encPub": self.enc_pub if self.relay else None,
                     "relayFrom": self.relay_from if self.relay and self.enc_pub else None}
        out: dict[str, Any] = {
            "did": self.did, "name": self.name, "reach": reach, "reachedBy": self.reached_by,
            "door": door, "relay": reach["relay"] if reach else None,
            "sources": sorted(self.sources), "firstSeen": self.first_seen,
            "lastSeen": self.last_seen}
        if self.connection is not None:
            out.update({k: v for k, v in self.connection.to_json().items() if k not in out})
        return out


class ContactBook:
    """The contact book of the identity ``owner_did``, over its store (and the doors it
    wrote to, ``ConnectionStore``: a door's grant and reply promise stay there)."""

    def __init__(self, owner_did: str, store: IdentityStore,
                 connections: ConnectionStore | None = None) -> None:
        from muretai_cli.home import ConnectionStore

        self.owner_did = owner_did
        self.store = store
        self.connections = connections or ConnectionStore(owner_did)

    def _contact(self, row: BookRow | None, did: str, sources: dict[str, tuple[int, int]],
                 connection: Connection | None) -> Contact:
        if connection is not None:
            kind = "grant" if connection.grant_id else "exchange"
            have = sources.get(kind)
            lo, hi = connection.since, connection.last
            sources = {**sources, kind: (min(lo, have[0]), max(hi, have[1])) if have
                       else (lo, hi)}
        if row is None:
            return Contact(did, sources=sources, connection=connection)
        return Contact(did, row.name, row.door, row.door_from, row.relay, row.enc_pub,
                       row.relay_from, sources, connection)

    def get(self, did: str) -> Contact | None:
        """The contact ``did`` (None: the book knows nothing of it)."""
        row = self.store.book_row(did)
        connection = self.connections.get(did)
        if row is None and connection is None:
            return None
        return self._contact(row, did, {}, connection)

    def all(self) -> list[Contact]:
        """Every contact, by DID: the book's, the doors written to, and those the store
        proves (grants redeemed here, approvals, verified exchanges)."""
        rows = {r.did: r for r in self.store.book_rows()}
        conns = {c.did: c for c in self.connections.all()}
        sources = self.store.book_sources()
        dids = sorted(set(rows) | set(conns) | set(sources))
        return [self._contact(rows.get(d), d, sources.get(d, {}), conns.get(d)) for d in dids
                if d != self.owner_did]

    def names(self) -> dict[str, str]:
        """DID -> the owner's name, for every named contact."""
        return {r.did: r.name for r in self.store.book_rows() if r.name}

    def name_of(self, did: str) -> str | None:
        """The owner's name for ``did`` (None: it has none)."""
        row = self.store.book_row(did)
        return row.name if row is not None else None

    def named(self, name: str) -> Contact | None:
        row = self.store.book_named(name)
        return None if row is None else self.get(row.did)

    def did_for(self, name: str) -> str:
        """The DID the owner named ``name``; ``InputError`` ``unknown-name`` when none."""
        row = self.store.book_named(name)
        if row is None:
            shown = name.encode("ascii", "backslashreplace").decode("ascii")[:80]
            raise InputError("unknown-name", f"{shown!r} is neither a DID nor a name you "
                                             "gave a contact",
                             hint="give the peer's DID (did:key:z6Mk…), or name it first: "
                                  "`muretai op contact name DID NAME`")
        return row.did

    def learn(self, did: str, *, source: Source, now: int, door: str | None = None,
              relay: str | None = None, enc_pub: str | None = None) -> None:
        """Record a verified way to reach ``did`` (or, with none given, that it was met)."""
        if did == self.owner_did:
            return
        self.store.learn_reach(did, source=source, now=now, door=door, relay=relay,
                               enc_pub=enc_pub)

    def name(self, did: str, name: str, now: int, *, keys: Path) -> bool:
        """Give ``did`` the owner's ``name``; whether it changed. ``InputError``
        ``bad-contact-name``; ``Refused`` ``to-self``, ``name-shadows-identity`` (one of
        the owner's identities or trusted orgs has it), ``name-taken`` (another DID)."""
        from muretai_cli.home import KeyStore, TrustList

        check_contact_name(name)
        if did == self.owner_did:
            raise Refused("to-self", "that DID is this identity's own; its name is the "
                                     "identity's")
        key = name.casefold()
        mine = [n for n in KeyStore(keys).names() if n.casefold() == key]
        orgs = [o.name for o in TrustList().all() if o.name.casefold() == key]
        if mine or orgs:
            what = f"your identity {mine[0]}" if mine else f"the trusted org {orgs[0]}"
            raise Refused("name-shadows-identity", f"the name {name!r} is {what}'s; a "
                                                   "contact's name never shadows it",
                          hint="choose another name")
        return self.store.name_contact(did, name, now)

    def unname(self, name: str) -> str:
        """Take the owner's ``name`` off its contact; the DID it stood for. ``Refused``
        ``no-such-name``."""
        check_contact_name(name)
        did = self.store.unname_contact(name)
        if did is None:
            raise Refused("no-such-name", f"no contact is named {name!r}",
                          hint="list them with `muretai op connections`")
        return did
