"""The blind relay server: store-and-forward of sealed deposits for many DIDs.

    core     Relay: each route as bytes in, answer out
    limits   RelayLimits, RelayConfig, the epoch rule: every bound of ``relay serve``
    answers  a route's answer and refusal, the checks of its request's fields
    store    RelayStore: every SQL statement (SQLite or PostgreSQL through muretai_cli.db)
    notify   Notifier: wakes held long-polls (in-process by default)
    app      the starlette app and its exact-path routes
    serve    serve_relay: the store opened once, then one process or workers

Never imports ``door/``, ``inbox/`` or ``visit/``, and holds no key that opens a box.
"""

# The room's public surface: its modules (each imported on first use, never here).
__all__ = ["answers", "app", "core", "limits", "notify", "pgnotify", "serve", "store"]
