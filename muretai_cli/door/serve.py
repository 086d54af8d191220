"""Starting a door: its store opened once (a schema this program does not know stops the
start now), its policy settled, then one process or several workers on the one port through
``transport.serve.serve_workers``. The CLI's ``serve`` parses options and renders; the
wiring is here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from muretai_cli.transport.serve import Limits, Listening, serve_workers

if TYPE_CHECKING:
    from muretai_cli.door.config import DoorConfig
    from muretai_cli.door.respond import OnMessage
    from muretai_cli.inbox.consent import Policy
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.seam import SigningKey

__all__ = ["serve_door"]


def serve_door(key: SigningKey, config: DoorConfig, open_store: Callable[[], IdentityStore], *,
               host: str, port: int, workers: int = 1, policy: Policy | None = None,
               shared_store: bool = False, http: str = "auto",
               on_listening: Callable[[Listening, DoorConfig, str], None],
               on_event: Callable[[dict[str, Any]], None] | None = None,
               on_message: OnMessage | None = None,
               log: Callable[[str], None] = lambda _: None) -> int:
    """Serve the door of ``key`` until a signal stops it; the exit code.

    ``open_store()`` opens the identity's store (once here, and once in each worker);
    ``policy`` overrides the identity's own (`op policy`) for this run; ``shared_store``
    (PostgreSQL) means other processes may share the store, so rates are counted in it.
    ``on_listening(where, config, store)`` is told once the port is bound, before serving.
    """
    from muretai_cli.door.app import build_app
    from muretai_cli.door.core import Door
    from muretai_cli.inbox.consent import policy_of

    store = open_store()
    where = store.where
    config = replace(config, policy=policy or policy_of(store),
                     shared_rate=workers > 1 or shared_store)

    def app_for(index: int) -> Any:
        # A forked worker opens its own store (and gets its own copy of on_message).
        own = store if workers == 1 else open_store()
        return build_app(Door(key, config, own, on_event=on_event, on_message=on_message))

    return serve_workers(
        app_for, host=host, port=port, workers=workers,
        limits=Limits(slow_seconds=config.slow_seconds, max_connections=config.max_connections,
                      max_per_client=config.max_per_client, idle_seconds=config.idle_seconds,
                      http=http),
        on_listening=lambda at: on_listening(at, config, where), before_fork=store.close,
        log=log)
