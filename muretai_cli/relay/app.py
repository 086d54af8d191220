"""HTTP for the relay: an exact-path dispatcher under starlette and uvicorn.

Routes hang off the ``--url`` path, matched exactly on the raw request-target:
``POST <path>/send``, ``/listen``, ``/ack``, ``/card`` and ``GET``/``HEAD <path>/card/<did>``.
Anything else is 404 (a query string included); another method on a route is 405 with its
``Allow``; ``OPTIONS`` is 204 with the CORS headers a browser client needs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from starlette.applications import Starlette

from muretai_cli.relay.core import JSON_HEADERS, Headers, Relay, log, refusal_answer

if TYPE_CHECKING:
    import socket

    import uvicorn

    from muretai_cli.relay.core import RelayConfig

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

STARTED = "muretai.request_started"  # set by the transport's protocol when headers arrive
_POST_ALLOW = b"POST, OPTIONS"
_GET_ALLOW = b"GET, HEAD, OPTIONS"
_CORS = ((b"access-control-allow-origin", b"*"),
         (b"access-control-allow-headers", b"content-type"),
         (b"access-control-max-age", b"600"))


async def _answer(send: Send, status: int, body: bytes, headers: Headers, *,
                  head: bool = False, close: bool = False) -> None:
    out = [*headers, *_CORS[:1], (b"content-length", str(len(body)).encode())]
    if close:
        out.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def read_body(scope: Scope, receive: Receive, *, limit: int,
                    deadline: float) -> tuple[bytes | None, tuple[int, str, str] | None]:
    """The request body, or the refusal to send instead (413 over ``limit``, 408 late)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                return None, (400, "malformed", "bad content-length")
            if declared > limit:
                return None, (413, "too-large", f"the body is over {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout_at(deadline):
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None, None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    return None, (413, "too-large", f"the body is over {limit} bytes")
                chunks.append(chunk)
                more = message.get("more_body", False)
    except TimeoutError:
        return None, (408, "timeout", "the request did not arrive in time")
    return b"".join(chunks), None


class RelayHTTP:
    """Routes to ``Relay``; never a stack trace, never a silently closed socket."""

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        base = relay.config.url.path
        self.posts: dict[bytes, str] = {f"{base}/{name}".encode(): name
                                        for name in ("send", "listen", "ack", "card")}
        self.card_prefix = f"{base}/card/".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            await self._route(scope, receive, send)
        except Exception:
            log.exception("relay: internal error")
            with contextlib.suppress(Exception):
                await _answer(send, *refusal_answer(500, "internal", "internal error"),
                              close=True)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: bytes = scope.get("raw_path") or scope["path"].encode()
        method = scope["method"]
        if scope.get("query_string"):
            await _answer(send, *refusal_answer(404, "not-found", "no such route"))
            return
        route = self.posts.get(path)
        if route is not None:
            if method == "POST":
                await self._post(route, scope, receive, send)
            else:
                await self._other(method, _POST_ALLOW, send)
            return
        if path.startswith(self.card_prefix) and b"/" not in path[len(self.card_prefix):]:
            if method in ("GET", "HEAD"):
                did = unquote(path[len(self.card_prefix):].decode("latin-1"))
                await _answer(send, *self.relay.get_card(did), head=method == "HEAD")
            else:
                await self._other(method, _GET_ALLOW, send)
            return
        await _answer(send, *refusal_answer(404, "not-found", "no such route"))

    @staticmethod
    async def _other(method: str, allow: bytes, send: Send) -> None:
        if method == "OPTIONS":
            await _answer(send, 204, b"", ((b"allow", allow), *_CORS[1:],
                                           (b"access-control-allow-methods", allow)))
            return
        status, body, headers = refusal_answer(405, "method-not-allowed",
                                               f"this route answers {allow.decode()}")
        await _answer(send, status, body, ((b"allow", allow), *headers))

    async def _post(self, route: str, scope: Scope, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        started = scope.get(STARTED) or loop.time()
        raw, refusal = await read_body(scope, receive, limit=self.relay.limits.max_body,
                                       deadline=started + self.relay.config.slow_seconds)
        if refusal is not None:
            await _answer(send, *refusal_answer(*refusal), close=True)
            return
        if raw is None:
            return  # the client left
        if route == "listen":
            gone = asyncio.Event()
            watcher = asyncio.ensure_future(_watch_disconnect(receive, gone))
            try:
                answer = await self.relay.listen(raw, gone)
            finally:
                watcher.cancel()
            if answer is not None:
                await _answer(send, *answer)
            return
        handler = {"send": self.relay.send, "ack": self.relay.ack,
                   "card": self.relay.put_card}[route]
        await _answer(send, *handler(raw))


async def _watch_disconnect(receive: Receive, gone: asyncio.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


def build_app(relay: Relay) -> Starlette:
    """The starlette app: the lifespan closes the store; every request goes to ``RelayHTTP``."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await relay.notifier.start()
        try:
            yield
        finally:
            await relay.notifier.aclose()
            relay.store.close()

    app = Starlette(lifespan=lifespan)
    app.router.redirect_slashes = False
    app.router.default = RelayHTTP(relay)
    return app


def server_for(app: Starlette, config: RelayConfig, *, host: str, port: int,
               http: str = "auto") -> tuple[uvicorn.Server, socket.socket]:
    """A uvicorn server for ``app`` and the socket it will serve, bound to ``host:port``."""
    sock = bind_socket(host, port)
    return server_on(app, config, sock, host=host, http=http), sock


def bind_socket(host: str, port: int) -> socket.socket:
    """The relay's listening socket (inheritable: ``--workers`` forks serve it together)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.set_inheritable(True)
    return sock


def server_on(app: Starlette, config: RelayConfig, sock: socket.socket, *, host: str,
              http: str = "auto") -> uvicorn.Server:
    """A uvicorn server for ``app`` on an already bound ``sock``."""
    import uvicorn

    return uvicorn.Server(uvicorn.Config(
        app, host=host, port=sock.getsockname()[1], http=http, lifespan="on",
        access_log=False, log_level="warning", timeout_keep_alive=5, server_header=False,
        date_header=False, proxy_headers=False,
        limit_concurrency=config.max_connections or None))


__all__ = ["JSON_HEADERS", "RelayHTTP", "bind_socket", "build_app", "read_body", "server_for",
           "server_on"]
