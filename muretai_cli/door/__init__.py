"""The receiving side: a door that publishes a signed card, verifies signed messages through
the ladder, applies the owner's consent rules and keeps what it accepted (SQLite).
The ladder after transport, consent and the store live in ``inbox/``, shared with the
relay drain.

    config.py     DoorConfig: how a door runs, valid on construction
    core.py       Door: the ladder in order, consent, signed replies
    card.py       the card and its signed envelope, the terms, the WBA key directory
    executors.py  where store calls run: in place, or grouped (PostgreSQL group commits)
    events.py     what the ``on_event`` hook is told of each arrival
    app.py     the starlette app: exact routes and the body cap (served by ``transport/``)
    serve.py   ``serve_door``: the store opened once, the policy settled, workers started

Imports starlette/uvicorn/sqlite3 only from its submodules, so the CLI pays for them only in
the commands that use them.
"""

# The room's public surface: its modules (each imported on first use, never here).
__all__ = ["app", "card", "config", "core", "events", "executors", "publish", "respond", "serve",
           "wba"]
