"""The local trust list of organisations: DIDs whose org name the person vouches for.

    $MURETAI_HOME/trust.json  {"v": 1, "orgs": {<org DID>: {"name", "added"}}}
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muretai_cli.errors import InputError
from muretai_cli.home._files import home_dir, read_json_file, write_json_file

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
        self.path = path or home_dir() / "trust.json"
        self._cache: dict[str, dict[str, Any]] | None = None

    def _load(self) -> dict[str, dict[str, Any]]:
        """The file as read once by this store (a command's view); writers read afresh."""
        if self._cache is None:
            self._cache = self._read()
        return self._cache

    def _save(self, value: dict[str, dict[str, Any]]) -> None:
        write_json_file(self.path, {"v": 1, "orgs": value})
        self._cache = dict(value)

    def _read(self) -> dict[str, dict[str, Any]]:
        data = read_json_file(self.path, {"v": 1, "orgs": {}})
        orgs = data.get("orgs") if isinstance(data, dict) else None
        if not isinstance(orgs, dict):
            raise InputError("bad-state", f"{self.path} is not a trust list")
        return {k: v for k, v in orgs.items() if isinstance(v, dict)
                and isinstance(v.get("name"), str)}

    def get(self, did: str) -> TrustedOrg | None:
        entry = self._load().get(did)
        return TrustedOrg(did, entry["name"], int(entry.get("added", 0))) if entry else None

    def all(self) -> list[TrustedOrg]:
        return [TrustedOrg(k, v["name"], int(v.get("added", 0)))
                for k, v in sorted(self._load().items())]

    def add(self, did: str, name: str, now: int) -> TrustedOrg:
        if not name or len(name) > MAX_NAME:
            raise InputError("bad-name", f"an org name is 1..{MAX_NAME} characters")
        orgs = self._read()
        orgs[did] = {"name": name, "added": now}
        self._save(orgs)
        return TrustedOrg(did, name, now)

    def remove(self, did: str) -> TrustedOrg | None:
        orgs = self._read()
        entry = orgs.pop(did, None)
        if entry is None:
            return None
        self._save(orgs)
        return TrustedOrg(did, entry["name"], int(entry.get("added", 0)))
