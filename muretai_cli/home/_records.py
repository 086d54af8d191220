"""Signed records kept in the home: KeyState pins per root DID, and what each identity minted.

    $MURETAI_HOME/keystate-pins.json  {"v": 1, "pins": {<root DID>: {<KeyState>, "pinned": t}}}
    $MURETAI_HOME/minted.json         {"v": 1, "records": {"<identity>/<kind>": {<record>}}}

These are files, not judges: whether a KeyState may replace a pin is decided by the caller's
``newer`` (the ratchet lives with the artifact), read and written here in one step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from muretai_cli.home._files import JsonTable, home_dir

Record = dict[str, Any]


class KeyStatePins:
    """One pinned KeyState per root DID; replaced only when the caller's rule says so."""

    def __init__(self, path: Path | None = None) -> None:
        self._table = JsonTable(path or home_dir() / "keystate-pins.json", "pins",
                                required="opDid", what="a KeyState pin file",
                                hint="move it aside; pins are taken again with --pin")
        self.path = self._table.path

    def get(self, root_did: str) -> Record | None:
        entry = self._table.load().get(root_did)
        return {k: v for k, v in entry.items() if k != "pinned"} if entry else None

    def offer(self, root_did: str, record: Record, now: int,
              newer: Callable[[Record | None], bool]) -> bool:
        """Keep ``record`` for ``root_did`` when ``newer(stored record or None)``; atomic."""
        pins = self._table.read()
        entry = pins.get(root_did)
        stored = {k: v for k, v in entry.items() if k != "pinned"} if entry else None
        if not newer(stored):
            return False
        pins[root_did] = {**record, "pinned": now}
        self._table.save(pins)
        return True


class MintedRecords:
    """The last record of each kind an identity signed, so the next one can follow it."""

    def __init__(self, path: Path | None = None) -> None:
        self._table = JsonTable(path or home_dir() / "minted.json", "records", required="typ",
                                what="a minted-records file")

    def last(self, identity: str, kind: str) -> Record | None:
        return self._table.read().get(f"{identity}/{kind}")

    def keep(self, identity: str, kind: str, record: Record) -> None:
        records = self._table.read()
        records[f"{identity}/{kind}"] = record
        self._table.save(records)
