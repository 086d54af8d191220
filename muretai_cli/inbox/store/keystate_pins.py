"""Per-sender KeyState pins, in the identity's own database: the memory the ratchet needs.

    keystate_pins  root_did, epoch, root_key, record (the verified KeyState), pinned

A table of the identity store's schema (version 8, ``schema.py``), on SQLite or PostgreSQL
alike: ``db init``/``db upgrade`` create it with the rest, and receiving runs no DDL. A pin
only moves forward: the write itself refuses a lower or equal epoch, or another root key,
so two processes racing with records of different epochs keep the newer whatever their
order (seam §6.1 rule 2, in SQL as in ``replaces_pin``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from muretai_cli.artifacts.keystate import KeyState
    from muretai_cli.db import Database

_GET = "SELECT record FROM keystate_pins WHERE root_did=?"
# Forward only: a conflicting row is replaced when the new record is strictly newer under the
# same root key, and left alone otherwise (the caller learns which from the row count).
_OFFER = ("INSERT INTO keystate_pins (root_did, epoch, root_key, record, pinned) "
          "VALUES (?, ?, ?, ?, ?) ON CONFLICT (root_did) DO UPDATE SET epoch=excluded.epoch, "
          "record=excluded.record, pinned=excluded.pinned WHERE "
          "excluded.epoch > keystate_pins.epoch AND excluded.root_key = keystate_pins.root_key")


class KeyStatePinStore:
    """The pins of one identity's senders, over its database (the door store's ``db``)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, root_did: str) -> dict[str, Any] | None:
        """The pinned KeyState for ``root_did`` (verify it before trusting it), or None."""
        text = self.get_text(root_did)
        record = None if text is None else json.loads(text)
        return record if isinstance(record, dict) else None

    def get_text(self, root_did: str) -> str | None:
        """The pinned record as stored: its canonical JSON text (None: no pin)."""
        row = self.db.one(_GET, (root_did,))
        return None if row is None else str(row[0])

    def offer(self, ks: KeyState, now: int) -> bool:
        """Pin a verified record; True when it is now the pin (first, or strictly newer)."""
        from muretai_cli.seam import canonical_bytes

        with self.db.transaction(exclusive=False) as tx:
            changed = tx.execute(_OFFER, (ks.root_did, ks.epoch, ks.root_key,
                                          canonical_bytes(ks.to_json()).decode("utf-8"), now))
        return changed.rowcount > 0
