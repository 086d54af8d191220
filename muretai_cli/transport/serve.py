"""Serving an ASGI app on a port, in one process or as workers: the one way the door and the
relay start (``door.serve``, ``relay.serve``), so neither the CLI nor a caller wires it.

``serve_workers`` binds first (one socket per worker on the one port, so connections queue
from that moment), says where it listens only once the single server is built (a client
acting on that line meets a server about to accept), closes the caller's parent-side
resources before it forks (no pool thread may live in a parent that forks), and runs the
workers under ``workers.run_workers``. It returns the exit code; it never prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import InputError
from muretai_cli.transport import IDLE_SECONDS, MAX_CONNECTIONS, MAX_PER_CLIENT

if TYPE_CHECKING:
    import uvicorn

__all__ = ["Limits", "Listening", "serve_workers"]


@dataclass(frozen=True, slots=True)
class Limits:
    """What the transport bounds for every connection of one server."""

    slow_seconds: float = 10.0
    max_connections: int = MAX_CONNECTIONS
    max_per_client: int = MAX_PER_CLIENT
    idle_seconds: float = IDLE_SECONDS
    http: str = "auto"  # the HTTP parser: auto | httptools | h11


@dataclass(frozen=True, slots=True)
class Listening:
    """Where a server listens, once it is bound: ``address`` is ``http://host:port``."""

    host: str
    port: int
    workers: int

    @property
    def address(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"


def serve_workers(app_for: Callable[[int], Any], *, host: str, port: int, workers: int,
                  limits: Limits, on_listening: Callable[[Listening], None],
                  before_fork: Callable[[], None] = lambda: None,
                  log: Callable[[str], None] = lambda _: None) -> int:
    """Bind ``host:port`` and serve ``app_for(i)`` (the ASGI app of process ``i``) until a
    signal stops it; the exit code. One worker serves in this process; more are forked,
    each on its own socket of the port, after ``before_fork()`` closed what the parent
    holds (and also when binding fails). A port that cannot be bound is ``cannot-bind``."""
    from muretai_cli.transport.binding import listening

    if workers > 1:
        before_fork()
    try:
        socks = listening(host, port, workers)  # cannot-bind, with what to do
    except InputError:
        if workers == 1:
            before_fork()
        raise
    bound = socks[0].getsockname()
    where = Listening(bound[0], bound[1], workers)

    def prepare(index: int) -> uvicorn.Server:
        import uvicorn

        from muretai_cli.transport.server import server_config

        return uvicorn.Server(server_config(
            app_for(index), host=host, port=where.port, http=limits.http,
            slow_seconds=limits.slow_seconds, max_connections=limits.max_connections,
            max_per_client=limits.max_per_client, idle_seconds=limits.idle_seconds))

    if workers == 1:
        single = prepare(0)  # built before "listening" is said: the socket queues till then
        on_listening(where)
        single.run(sockets=socks)
        return 0
    on_listening(where)
    from muretai_cli.transport.workers import run_workers

    # worker i serves socket i (the kernel spreads connections over them), restarted or not
    return run_workers(workers, lambda i: prepare(i).run(sockets=[socks[i]]), log=log)
