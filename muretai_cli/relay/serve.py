"""Starting a relay: its store opened once (created on SQLite; on PostgreSQL it must exist,
made by `muretai db init --relay`), then one process or several workers on the one port
through ``transport.serve.serve_workers``. The CLI's ``relay serve`` parses options and
renders; the wiring is here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import InputError
from muretai_cli.transport.serve import Limits, Listening, serve_workers

if TYPE_CHECKING:
    from muretai_cli.relay.limits import RelayConfig

__all__ = ["serve_relay"]


def serve_relay(config: RelayConfig, *, db: str | None, host: str, port: int,
                workers: int = 1, http: str = "auto",
                on_listening: Callable[[Listening, str], None],
                log: Callable[[str], None] = lambda _: None) -> int:
    """Serve the relay until a signal stops it; the exit code. ``db``: a SQLite file or a
    ``postgresql://`` URL (None: the default file). Workers need PostgreSQL: they wake each
    other's long-polls through it. ``on_listening(where, store)`` is told once bound."""
    from muretai_cli.db import is_postgres_url
    from muretai_cli.relay.app import build_app
    from muretai_cli.relay.core import Relay
    from muretai_cli.relay.store import RelayStore

    shared = is_postgres_url(db)
    if workers > 1 and not shared:
        raise InputError("workers-need-postgresql", "--workers above 1 needs --db "
                         "postgresql://…: on SQLite a long-poll would not wake on a deposit "
                         "made through another process",
                         hint="run one process on SQLite, or see docs/scale-out.md")
    # A PostgreSQL store is created by `muretai db init --relay`, never by a server.
    store = RelayStore.open(db, durable=config.durable, create=not shared)
    where = store.db.describe()

    def app_for(index: int) -> Any:
        own = store if workers == 1 else RelayStore.open(db, durable=config.durable,
                                                         create=False)
        notifier = None
        if shared and db is not None:
            from muretai_cli.relay.pgnotify import PgNotifier

            notifier = PgNotifier(db)
        return build_app(Relay(config, own, notifier=notifier))

    return serve_workers(
        app_for, host=host, port=port, workers=workers,
        limits=Limits(slow_seconds=config.slow_seconds, max_connections=config.max_connections,
                      max_per_client=config.max_per_client, idle_seconds=config.idle_seconds,
                      http=http),
        on_listening=lambda at: on_listening(at, where), before_fork=store.close, log=log)
