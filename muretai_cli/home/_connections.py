"""Connections of one identity: doors it has written to and heard back from, verified.

    $MURETAI_HOME/connections/<identity's key, z...>.json
        {"v": 1, "connections": {<door DID>: {"endpoint", "base", "since", "last",
                                               "grantId"?, "expires"?,
                                               "replyBinding"?}}}

A connection is remembered only after a verified reply, so a later DM goes to the endpoint
that answered as that DID.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muretai_cli.errors import InputError
from muretai_cli.home._files import JsonTable, home_dir


@dataclass(frozen=True, slots=True)
class Connection:
    did: str
    endpoint: str
    base: str
    since: int
    last: int
    grant_id: str | None = None
    expires: int | None = None
    reply_binding: str | None = None  # the card's promise of bound replies, when it made one

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"did": self.did, "endpoint": self.endpoint, "base": self.base,
                               "since": self.since, "last": self.last}
        if self.grant_id is not None:
            out["grantId"] = self.grant_id
        if self.expires is not None:
            out["expires"] = self.expires
        if self.reply_binding is not None:
            out["replyBinding"] = self.reply_binding
        return out


def _of(did: str, raw: dict[str, Any]) -> Connection:
    grant_id = raw.get("grantId")
    expires = raw.get("expires")
    binding = raw.get("replyBinding")
    return Connection(did, str(raw["endpoint"]), str(raw.get("base", raw["endpoint"])),
                      int(raw.get("since", 0)), int(raw.get("last", 0)),
                      grant_id if isinstance(grant_id, str) else None,
                      expires if isinstance(expires, int) else None,
                      binding if isinstance(binding, str) else None)


class ConnectionStore:
    """The connections of the identity whose DID is ``owner_did``."""

    def __init__(self, owner_did: str, root: Path | None = None) -> None:
        key = owner_did.rsplit(":", 1)[-1]
        if not key.isalnum():
            raise InputError("bad-did", f"{owner_did!r} cannot name a connections file")
        self.owner_did = owner_did
        self._table = JsonTable((root or home_dir() / "connections") / f"{key}.json",
                                "connections", required="endpoint", what="a connections file")
        self.path = self._table.path

    def get(self, did: str) -> Connection | None:
        raw = self._table.read().get(did)
        return _of(did, raw) if raw else None

    def all(self) -> list[Connection]:
        return [_of(k, v) for k, v in sorted(self._table.read().items())]

    def remember(self, did: str, *, endpoint: str, base: str, now: int,
                 grant_id: str | None = None, expires: int | None = None,
                 reply_binding: str | None = None) -> Connection:
        conns = self._table.read()
        old = conns.get(did)
        entry: dict[str, Any] = {"endpoint": endpoint, "base": base,
                                 "since": int(old.get("since", now)) if old else now,
                                 "last": now}
        grant_id = grant_id or (old or {}).get("grantId")
        expires = expires if expires is not None else (old or {}).get("expires")
        if isinstance(grant_id, str):
            entry["grantId"] = grant_id
        if isinstance(expires, int):
            entry["expires"] = expires
        # A promise once seen stays required: a later card cannot quietly drop it.
        reply_binding = reply_binding or (old or {}).get("replyBinding")
        if isinstance(reply_binding, str):
            entry["replyBinding"] = reply_binding
        conns[did] = entry
        self._table.save(conns)
        return _of(did, entry)
