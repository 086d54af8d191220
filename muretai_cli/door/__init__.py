"""The receiving side: a door that publishes a signed card, verifies signed messages through
the ladder, applies the owner's consent rules and keeps what it accepted (SQLite).
The ladder after transport, consent and the store live in ``inbox/``, shared with the
relay drain.

    rate.py    per-sender and door-wide token buckets
    core.py    Door: the card and its envelope, the ladder in order, signed replies
    app.py     the starlette app: exact routes and the body cap (served by ``transport/``)

Imports starlette/uvicorn/sqlite3 only from its submodules, so the CLI pays for them only in
the commands that use them.
"""
