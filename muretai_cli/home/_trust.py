"""The local trust list of organisations: DIDs whose org name the person vouches for.

    $MURETAI_HOME/trust.json  {"v": 1, "orgs": {<org DID>: {"name", "added"}}}
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muretai_cli.errors import InputError
from muretai_cli.home._files import JsonTable, home_dir

MAX_NAME = 200


@dataclass(frozen=True, slots=True)
class TrustedOrg:
    did: str
    name: str
    added: int

    def to_json(self) -> dict[str, Any]:
        return {"did": self.did, "name": self.name, "added": self.added}


class TrustList:
    def __init__(self, path: Path | None = None) -> None:
        self._table = JsonTable(path or home_dir() / "trust.json", "orgs", required="name",
                                what="a trust list")
        self.path = self._table.path

    def get(self, did: str) -> TrustedOrg | None:
        entry = self._table.load().get(did)
        return TrustedOrg(did, entry["name"], int(entry.get("added", 0))) if entry else None

    def all(self) -> list[TrustedOrg]:
        return [TrustedOrg(k, v["name"], int(v.get("added", 0)))
                for k, v in sorted(self._table.load().items())]

    def add(self, did: str, name: str, now: int) -> TrustedOrg:
        if not name or len(name) > MAX_NAME:
            raise InputError("bad-name", f"an org name is 1..{MAX_NAME} characters")
        orgs = self._table.read()
        orgs[did] = {"name": name, "added": now}
        self._table.save(orgs)
        return TrustedOrg(did, name, now)

    def remove(self, did: str) -> TrustedOrg | None:
        orgs = self._table.read()
        entry = orgs.pop(did, None)
        if entry is None:
            return None
        self._table.save(orgs)
        return TrustedOrg(did, entry["name"], int(entry.get("added", 0)))
