"""Where each identity can be reached: its relay (``id new --relay``, ``id relay``).

    $MURETAI_HOME/profiles.json   {"v": 1, "profiles": {<DID>: {"relay": URL, "since": int}}}

Kept beside the keys, not in them: a key file holds only the seed and what derives from it.
"""

from __future__ import annotations

import time
from pathlib import Path

from muretai_cli.home._files import JsonTable, home_dir


class Profiles:
    def __init__(self, root: Path | None = None) -> None:
        self._table = JsonTable((root or home_dir()) / "profiles.json", "profiles",
                                required="relay", what="a profiles file")
        self.path = self._table.path

    def relay_of(self, did: str) -> str | None:
        entry = self._table.read().get(did)
        return str(entry["relay"]) if entry else None

    def set_relay(self, did: str, relay: str, *, now: int | None = None) -> None:
        """Record ``relay`` (already canonical) as where ``did`` can be reached."""
        records = self._table.read()
        records[did] = {"relay": relay, "since": int(time.time()) if now is None else now}
        self._table.save(records)
