"""Door stores for tests, on either backend (a SQLite path or a PostgreSQL URL), and a
PostgreSQL role of a test's own that can be shut out (``Role``; the ``role`` fixture)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import psycopg

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


# -- a database of the test's own, reached through a role that can be shut out -----------
@dataclass
class Role:
    admin: str  # the test server's superuser URL to this database
    url: str  # the same database as the role (what the servers are given)
    name: str

    def away(self) -> None:
        """Every session of the role ended, and no new one let in (SQLSTATE 53300)."""
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {self.name} CONNECTION LIMIT 0")
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE usename = %s", (self.name,))

    def back(self) -> None:
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {self.name} CONNECTION LIMIT -1")


def with_path(url: str, *, path: str | None = None, user: str | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if user is not None:
        netloc = f"{user}@{netloc.rsplit('@', 1)[-1]}"
    return urlunsplit(parts._replace(netloc=netloc, path=path or parts.path))
