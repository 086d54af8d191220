"""Card pins, as ssh's known_hosts: a base URL's first verified DID, kept in the home.

    $MURETAI_HOME/pins.json   {"v": 1, "pins": {<canonical base URL>: {"did", "first", "last"}}}

A base URL is the unit (``https://host/support`` and ``https://host/sales`` may be different
agents); ``forget`` is the one way to accept a change of DID.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muretai_cli.errors import InputError
from muretai_cli.home._files import JsonTable, home_dir


@dataclass(frozen=True, slots=True)
class Pin:
    base: str
    did: str
    first: int
    last: int

    def to_json(self) -> dict[str, Any]:
        return {"origin": self.base, "did": self.did, "first": self.first, "last": self.last}


class PinStore:
    """Read, record and forget pins. Every write is atomic."""

    def __init__(self, path: Path | None = None) -> None:
        self._table = JsonTable(path or home_dir() / "pins.json", "pins", required="did",
                                what="a pins file",
                                hint="move it aside; pins are recorded again on the next fetch")
        self.path = self._table.path

    def get(self, base: str) -> Pin | None:
        entry = self._table.load().get(base)
        if entry is None:
            return None
        return Pin(base, entry["did"], int(entry.get("first", 0)), int(entry.get("last", 0)))

    def all(self) -> list[Pin]:
        return [Pin(k, v["did"], int(v.get("first", 0)), int(v.get("last", 0)))
                for k, v in sorted(self._table.load().items())]

    def record(self, base: str, did: str, now: int) -> Pin:
        """Pin ``did`` for ``base`` (first sighting) or refresh ``last``; never changes a DID."""
        pins = self._table.read()
        entry = pins.get(base)
        if entry is not None and entry["did"] != did:
            raise InputError("pin-conflict", f"{base} is pinned to {entry['did']}, not {did}")
        first = int(entry.get("first", now)) if entry else now
        pins[base] = {"did": did, "first": first, "last": now}
        self._table.save(pins)
        return Pin(base, did, first, now)

    def forget(self, base: str) -> Pin | None:
        pins = self._table.read()
        entry = pins.pop(base, None)
        if entry is None:
            return None
        self._table.save(pins)
        return Pin(base, entry["did"], int(entry.get("first", 0)), int(entry.get("last", 0)))
