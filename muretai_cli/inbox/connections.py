"""An identity's connections as one list: its contact book (``inbox.contacts``: every peer
met by invite, grant, approval or exchange, the owner's name for it and how it is reached)
with the last message either way and whether it was checked out of band.

``op connections`` and the MCP tool ``list_connections`` both read it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from muretai_cli.inbox.store import IdentityStore

__all__ = ["connection_rows"]


def connection_rows(did: str, store: IdentityStore) -> list[dict[str, Any]]:
    """The connections of ``did``, sorted by DID: ``did``, ``name`` (the owner's),
    ``reach`` (door, or relay and ``encPub``, each with where it came from), ``reachedBy``
    (door, relay or None), ``sources``, ``firstSeen``/``lastSeen``, ``relayHint`` (the
    relay a peer named in a message: only a place to look), ``checkedOutOfBand`` and
    ``lastMessage``."""
    from muretai_cli.home import VerifiedPeers
    from muretai_cli.inbox.contacts import Contact, ContactBook

    book = {c.did: c for c in ContactBook(did, store).all()}
    talked = {p["did"]: p for p in store.peers_summary()}
    checked = VerifiedPeers(did).dids()
    rows = []
    for peer in sorted(set(book) | set(talked) | checked):
        if peer == did:
            continue
        row = (book.get(peer) or Contact(peer)).to_json()
        said = talked.get(peer, {})
        row["relayHint"] = said.get("relay")
        row["lastMessage"] = said.get("lastMessage")
        row["checkedOutOfBand"] = peer in checked
        rows.append(row)
    return rows
