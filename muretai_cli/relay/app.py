"""HTTP for the relay: an exact-path dispatcher under starlette and uvicorn.

Routes hang off the ``--url`` path, matched exactly on the raw request-target:
``POST <path>/send``, ``/listen``, ``/ack``, ``/card`` and ``GET``/``HEAD <path>/card/<did>``.
Anything else is 404 (a query string included); another method on a route is 405 with its
``Allow``; ``OPTIONS`` is 204 with the CORS headers a browser client needs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import unquote

from starlette.applications import Starlette

from muretai_cli.relay.answers import refusal_answer
from muretai_cli.relay.core import Relay, log
from muretai_cli.transport.asgi import (
    HOLDABLE,
    BodyRefused,
    Receive,
    Scope,
    Send,
    answer,
    has_query,
    read_body,
)

_POST_ALLOW = b"POST, OPTIONS"
_GET_ALLOW = b"GET, HEAD, OPTIONS"
_CORS = ((b"access-control-allow-origin", b"*"),  # every other answer: core.JSON_HEADERS
         (b"access-control-allow-headers", b"content-type"),
         (b"access-control-max-age", b"600"))


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
                await answer(send, *refusal_answer(500, "internal", "internal error"),
                              close=True)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: bytes = scope.get("raw_path") or scope["path"].encode()
        method = scope["method"]
        if has_query(scope):
            await answer(send, *refusal_answer(404, "not-found", "no such route"))
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
                await answer(send, *await self.relay.get_card(did), head=method == "HEAD")
            else:
                await self._other(method, _GET_ALLOW, send)
            return
        await answer(send, *refusal_answer(404, "not-found", "no such route"))

    @staticmethod
    async def _other(method: str, allow: bytes, send: Send) -> None:
        if method == "OPTIONS":
            await answer(send, 204, b"", ((b"allow", allow), *_CORS,
                                           (b"access-control-allow-methods", allow)))
            return
        status, body, headers = refusal_answer(405, "method-not-allowed",
                                               f"this route answers {allow.decode()}")
        await answer(send, status, body, ((b"allow", allow), *headers))

    async def _post(self, route: str, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            raw = await read_body(scope, receive, limit=self.relay.limits.max_body,
                                  seconds=self.relay.config.slow_seconds)
        except BodyRefused as exc:
            await answer(send, *refusal_answer(exc.status, exc.code, exc.reason), close=True)
            return
        if raw is None:
            return  # the client left
        if route == "listen":
            gone, cut = asyncio.Event(), asyncio.Event()
            watcher = asyncio.ensure_future(_watch_disconnect(receive, gone))
            hook = scope.get(HOLDABLE)  # the transport may end it early to make room
            done = hook(cut.set) if hook is not None else None
            try:
                reply = await self.relay.listen(raw, gone, cut)
            finally:
                watcher.cancel()
                if done is not None:
                    done()
            if reply is not None:
                await answer(send, *reply)
            return
        handler = {"send": self.relay.send, "ack": self.relay.ack,
                   "card": self.relay.put_card}[route]
        await answer(send, *await handler(raw))


async def _watch_disconnect(receive: Receive, gone: asyncio.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            return


def build_app(relay: Relay) -> Starlette:
    """The starlette app: the lifespan closes the relay (its store); every request goes to
    ``RelayHTTP``."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await relay.notifier.start()
        try:
            yield
        finally:
            await relay.notifier.aclose()
            relay.close()

    app = Starlette(lifespan=lifespan)
    app.router.redirect_slashes = False
    app.router.default = RelayHTTP(relay)
    return app


__all__ = ["RelayHTTP", "build_app"]
