"""The HTTP server transport shared by the door and the relay: uvicorn, bounded.

    asgi.py     ASGI types, ``answer`` (one response) and ``read_body`` (a capped body that
                must arrive within the request's one head+body deadline)
    server.py   the protocol classes (header deadline, header-size bound, coalesced writes),
                ``protocol_for``, ``server_config`` (connection admission) and ``bind``

Knows nothing of what is served: a server hands it an ASGI app and its limits. Imports
uvicorn/h11 only from ``server.py``, so a caller pays for them only when it serves.
"""
