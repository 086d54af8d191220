"""Door stores for tests, on either backend (a SQLite path or a PostgreSQL URL)."""

from __future__ import annotations

from muretai_cli.db import is_postgres_url, open_database, upgrade
from muretai_cli.inbox.store import IdentityStore, door_namespace, door_schema, open_identity_store


def init_door_store(did: str, backend: str) -> None:
    """What ``muretai db init`` does for a PostgreSQL store (SQLite files create themselves)."""
    if is_postgres_url(backend):
        with open_database(backend, namespace=door_namespace(did)) as db:
            upgrade(db, door_schema())


def door_store(did: str, backend: str) -> IdentityStore:
    """A store for ``did`` at ``backend``, created if needed; another call is another
    connection to the same store (as a second process would open)."""
    init_door_store(did, backend)
    return open_identity_store(did, backend)
