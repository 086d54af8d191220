"""Peers an identity checked out of band (``op contact verify``): their fingerprint matched.

    $MURETAI_HOME/verified/<identity's key, z...>.json
        {"v": 1, "verified": {<peer DID>: {"fingerprint", "at"}}}

Kept per identity, beside its connections: a mark in the owner's home, never in a door's
store, and never from a peer.
"""

from __future__ import annotations

from pathlib import Path

from muretai_cli.errors import InputError
from muretai_cli.home._files import JsonTable, home_dir


class VerifiedPeers:
    """The peers the identity whose DID is ``owner_did`` has checked."""

    def __init__(self, owner_did: str, root: Path | None = None) -> None:
        key = owner_did.rsplit(":", 1)[-1]
        if not key.isalnum():
            raise InputError("bad-did", f"{owner_did!r} cannot name a verified-peers file")
        self._table = JsonTable((root or home_dir() / "verified") / f"{key}.json",
                                "verified", required="fingerprint",
                                what="a verified-peers file")
        self.path = self._table.path

    def mark(self, did: str, fingerprint: str, now: int) -> None:
        records = self._table.read()
        records[did] = {"fingerprint": fingerprint, "at": now}
        self._table.save(records)

    def dids(self) -> frozenset[str]:
        """Every checked peer (read once per object: one command's view)."""
        return frozenset(self._table.load())

    def at(self, did: str) -> int | None:
        record = self._table.load().get(did)
        at = record.get("at") if record else None
        return at if isinstance(at, int) and not isinstance(at, bool) else None
