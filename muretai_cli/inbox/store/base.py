"""What every table group of the identity store stands on: its one ``Database``, the
``meta`` table (the card's revision, settings) and ``batch``."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from muretai_cli.errors import InputError
from muretai_cli.inbox.store.bulk import Bulk, InTurn, JsonBatches
from muretai_cli.inbox.store.schema import door_schema

if TYPE_CHECKING:
    from muretai_cli.db import Database, Tx

__all__ = ["StoreBase"]


class StoreBase:
    """One identity's database, opened (a SQLite file, created or upgraded) or given.

    The way a batch of the door's lookups, commits and rate counts reaches the database is
    chosen here, once, by what the database declares (``Database.json_batches``): one
    statement per batch (``bulk.JsonBatches``) or each in turn (``bulk.InTurn``).
    """

    def __init__(self, where: Path | Database, *, durable: bool = False) -> None:
        from muretai_cli.db import Database

        if isinstance(where, Database):
            self.db = where
        else:
            from muretai_cli.db import open_database, upgrade

            self.db = open_database(where, namespace="door", durable=durable)
            try:
                upgrade(self.db, door_schema())
            except BaseException:
                self.db.close()
                raise
        self.where = self.db.describe()
        self._batched = False  # inside ``batch``: one transaction for every call
        self.bulk: Bulk = JsonBatches() if self.db.json_batches else InTurn()

    def close(self) -> None:
        self.db.close()

    # -- meta ------------------------------------------------------------------------
    def card_revision(self) -> str:
        row = self.db.one("SELECT value FROM meta WHERE key='card_rev'")
        return str(row[0]) if row else "0"

    def _bump_card(self, tx: Tx) -> None:
        tx.execute("INSERT INTO meta (key, value) VALUES ('card_rev', ?) "
                   "ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                   (secrets.token_hex(8),))

    def belongs_to(self, did: str) -> None:
        """This store is ``did``'s: marked so on its first use, and refused
        (``store-of-another-identity``) when another identity marked it first, so two
        identities given one SQLite ``--db`` never read or change each other's state."""
        row = self.db.one("SELECT value FROM meta WHERE key='identity'")
        if row is None:
            self.db.execute("INSERT INTO meta (key, value) VALUES ('identity', ?) "
                            "ON CONFLICT (key) DO NOTHING", (did,))
            row = self.db.one("SELECT value FROM meta WHERE key='identity'")
        owner = str(row[0]) if row else did
        if owner != did:
            raise InputError(
                "store-of-another-identity",
                f"the store {self.where} belongs to {owner}, not to {did}",
                hint="give each identity its own --db file, or leave --db out (each "
                     "identity then has its own file under $MURETAI_HOME/doors)")

    def setting(self, key: str) -> str | None:
        row = self.db.one("SELECT value FROM meta WHERE key=?", (key,))
        return str(row[0]) if row else None

    def set_setting(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, value))

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every call on this store inside the block commits together, or none does (a
        turn-check commits a listen answer's messages in one transaction, then acks)."""
        outer = self.db
        with outer.batch() as inner:
            self.db, self._batched = inner, True
            try:
                yield
            finally:
                self.db, self._batched = outer, False
