"""The HTTP server transport shared by the door and the relay: uvicorn, bounded.

    asgi.py     ASGI types, ``answer`` (one response) and ``read_body`` (a capped body that
                must arrive within the request's one head+body deadline)
    server.py   the protocol classes (header deadline, header-size bound, coalesced writes),
                ``protocol_for`` and ``server_config`` (connection admission)
    binding.py  listening sockets: ``bind``, ``bind_each`` (one per worker, SO_REUSEPORT)
                and ``listening`` (a failed bind as an ``InputError`` saying what to do)
    serve.py    ``serve_workers``: bind, close the caller's store before a fork, one
                process or workers (the one start of ``door.serve`` and ``relay.serve``)
    workers.py  ``run_workers``: forked workers on one port, supervised and restarted
    rate.py     token buckets per key and per server (the door's and the relay's limits)

Knows nothing of what is served: a server hands it an ASGI app and its limits. Of the
project it imports only itself and the error family (``errors.py`` imports nothing of the
project, so every layer may raise it: a bind that fails is an ``InputError``). Imports
uvicorn/h11 only from ``server.py``, so a caller pays for them only when it serves.
"""

__all__ = ["IDLE_SECONDS", "MAX_CONNECTIONS", "MAX_PER_CLIENT", "asgi", "binding", "children",
           "rate", "serve", "server", "workers"]

MAX_CONNECTIONS = 1000  # open connections per server (0: no bound)
MAX_PER_CLIENT = 100  # open connections from one peer address (0: no bound)
IDLE_SECONDS = 5.0  # a connection waiting for a request closes after this
