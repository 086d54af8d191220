"""``IdentityStore``: every table group of one identity's store over its one ``Database``,
used by its door, its turn-check and its owner's commands alike; and where it lives."""

from __future__ import annotations

from pathlib import Path

from muretai_cli.errors import InputError
from muretai_cli.home import home_dir
from muretai_cli.inbox.store.contacts import Contacts
from muretai_cli.inbox.store.decisions import Decisions
from muretai_cli.inbox.store.drained import Drained
from muretai_cli.inbox.store.grants import Grants
from muretai_cli.inbox.store.introductions import Introductions
from muretai_cli.inbox.store.receipts import Receipts
from muretai_cli.inbox.store.schema import door_schema

__all__ = ["IdentityStore", "db_path", "door_namespace", "doors_dir", "open_identity_store"]


class IdentityStore(Receipts, Decisions, Grants, Drained, Contacts, Introductions):
    """One identity's state, on the database it is given (one owner: a loop or a command).

    ``IdentityStore(path)`` opens (creating or upgrading) a SQLite file;
    ``open_identity_store`` picks the backend from a ``--db`` value. Nothing above this
    class knows which it has.
    """


def doors_dir() -> Path:
    return home_dir() / "doors"


def db_path(did: str) -> Path:
    """``$MURETAI_HOME/doors/<key>.sqlite3``: one database per identity, named by its DID."""
    key = did.rsplit(":", 1)[-1]
    if not key.isalnum():
        raise InputError("bad-did", "a door database is named by a did:key")
    return doors_dir() / f"{key}.sqlite3"


def door_namespace(did: str) -> str:
    """The PostgreSQL schema of an identity's door store: ``door_<key>``."""
    return "door_" + db_path(did).stem


def open_identity_store(did: str, target: str | None = None, *, durable: bool = False,
                        fix: str = "muretai db {verb} --db URL --as NAME") -> IdentityStore:
    """The identity's store: its SQLite file (``target`` None or a path; created and upgraded
    as needed, and refused when another identity's: ``IdentityStore.belongs_to``) or its
    schema in a PostgreSQL database (``postgresql://…``), which must already be at this
    program's schema version (``fix`` names the command that makes it so).
    """
    from muretai_cli.db import is_postgres_url, open_database, require

    if target is None or not is_postgres_url(target):
        store = IdentityStore(Path(target) if target else db_path(did), durable=durable)
        try:
            store.belongs_to(did)  # one SQLite file is one identity's
        except BaseException:
            store.close()
            raise
        return store
    db = open_database(target, namespace=door_namespace(did))
    try:
        require(db, door_schema(), fix=fix)
    except BaseException:
        db.close()
        raise
    return IdentityStore(db)
