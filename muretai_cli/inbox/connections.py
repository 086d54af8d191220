"""An identity's connections as one list: the peers its store has exchanged with, the doors
it writes to, and the peers checked out of band; each with how it is reached.

``op connections`` and the MCP tool ``list_connections`` both read it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from muretai_cli.inbox.store import IdentityStore

__all__ = ["connection_rows"]


def connection_rows(did: str, store: IdentityStore) -> list[dict[str, Any]]:
    """The connections of ``did``, sorted by DID: ``did``, ``door``/``relay``,
    ``reachedBy`` (door, relay or None), ``checkedOutOfBand`` and ``lastMessage``."""
    from muretai_cli.home import ConnectionStore, VerifiedPeers

    peers = {p["did"]: p for p in store.peers_summary()}
    for conn in ConnectionStore(did).all():
        peers.setdefault(conn.did, {"did": conn.did, "lastMessage": None}).update(
            {**conn.to_json(), "door": conn.endpoint})
    checked = VerifiedPeers(did).dids()
    for peer in checked:  # a peer checked out of band is one you know, written to or not
        peers.setdefault(peer, {"did": peer, "lastMessage": None})
    rows = [peers[k] for k in sorted(peers)]
    for row in rows:
        row["reachedBy"] = "door" if row.get("door") else "relay" if row.get("relay") else None
        row["checkedOutOfBand"] = row["did"] in checked
    return rows
