"""HTTP for the door: a starlette app under uvicorn, and the transport bounds.

Routes hang off the ``--url`` path and are matched exactly, on the raw request-target:
``<path>/.well-known/agent-card.json`` (and ``agent.json``, the same bytes),
``<path>/.well-known/agent-card.sig.json`` and ``POST <path>``. Everything else is 404
(a query string included); ``OPTIONS`` on an advertised address is 204 with its ``Allow``,
another method there is 405.

Transport bounds: a body over 1 MiB is 413 before it is parsed (by ``Content-Length``, or as
it streams); the request line, headers and body must all arrive within ``slow_seconds`` (10 s)
of the door starting to wait for them, else 408; malformed framing is uvicorn's 400.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import h11
from starlette.applications import Starlette
from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    _HAVE_HTTPTOOLS = True
except ImportError:  # pragma: no cover - httptools is optional for uvicorn
    _HAVE_HTTPTOOLS = False
    HttpToolsProtocol = H11Protocol  # type: ignore[misc,assignment]

from muretai_cli.db import DatabaseUnavailable
from muretai_cli.door.core import JSON_HEADERS, UNAVAILABLE, Door
from muretai_cli.inbox.ladder import MAX_BODY
from muretai_cli.urls import CARD_PATH, CARD_SIG_PATH, LEGACY_CARD_PATH

if TYPE_CHECKING:
    import socket

    import uvicorn

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_CORS = ((b"access-control-allow-origin", b"*"),
         (b"access-control-allow-headers", b"content-type"),
         (b"access-control-max-age", b"600"))
STARTED = "muretai.request_started"  # scope key: when the door began awaiting this request
_GET_ALLOW = b"GET, HEAD, OPTIONS"
_INTERNAL = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}'
_POST_ALLOW = b"POST, OPTIONS"


def _plain(status: int, error: str) -> tuple[int, bytes, tuple[tuple[bytes, bytes], ...]]:
    return status, json.dumps({"error": error}).encode(), JSON_HEADERS


async def _answer(send: Send, status: int, body: bytes,
                  headers: tuple[tuple[bytes, bytes], ...], *, head: bool = False,
                  close: bool = False) -> None:
    out = [*headers, (b"content-length", str(len(body)).encode())]
    if close:
        out.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": b"" if head else body})


class DoorHTTP:
    """The exact-path dispatcher behind the starlette app."""

    def __init__(self, door: Door) -> None:
        self.door = door
        base = door.config.url.path
        self.post_path = (base or "/").encode()
        self.cards = {(base + CARD_PATH).encode(): "card",
                      (base + LEGACY_CARD_PATH).encode(): "card",
                      (base + CARD_SIG_PATH).encode(): "sig"}
        self.slow = door.config.slow_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            await self._route(scope, receive, send)
        except Exception:  # the last word: never a stack trace, never a closed socket
            from muretai_cli.door.core import log

            log.exception("door: internal error")
            with contextlib.suppress(Exception):
                await _answer(send, 200, _INTERNAL, JSON_HEADERS, close=True)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("raw_path") or scope["path"].encode()
        method = scope["method"]
        if scope.get("query_string"):
            await _answer(send, *_plain(404, "not found"))
            return
        kind = self.cards.get(path)
        if kind is not None:
            if method in ("GET", "HEAD"):
                try:
                    body = (self.door.card_bytes() if kind == "card"
                            else self.door.envelope_bytes())
                except DatabaseUnavailable:
                    await _answer(send, *UNAVAILABLE, head=method == "HEAD")
                    return
                await _answer(send, 200, body, JSON_HEADERS, head=method == "HEAD")
            elif method == "OPTIONS":
                await _answer(send, 204, b"", ((b"allow", _GET_ALLOW), *_CORS,
                                               (b"access-control-allow-methods", _GET_ALLOW)))
            else:
                await _answer(send, *_plain(405, "method not allowed"))
            return
        if path != self.post_path:
            await _answer(send, *_plain(404, "not found"))
            return
        if method == "POST":
            await self._post(scope, receive, send)
        elif method == "OPTIONS":
            await _answer(send, 204, b"", ((b"allow", _POST_ALLOW), *_CORS,
                                           (b"access-control-allow-methods", _POST_ALLOW)))
        else:
            status, body, headers = _plain(405, "method not allowed")
            await _answer(send, status, body, ((b"allow", _POST_ALLOW), *headers))

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _answer(send, *_plain(400, "bad content-length"), close=True)
                    return
                if declared > MAX_BODY:
                    await _answer(send, *_plain(413, "request body too large"), close=True)
                    return
        chunks: list[bytes] = []
        size = 0
        loop = asyncio.get_running_loop()
        started = scope.get(STARTED) or loop.time()
        try:
            async with asyncio.timeout_at(started + self.slow):
                more = True
                while more:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > MAX_BODY:
                        await _answer(send, *_plain(413, "request body too large"), close=True)
                        return
                    chunks.append(chunk)
                    more = message.get("more_body", False)
        except TimeoutError:
            await _answer(send, *_plain(408, "request body did not arrive in time"), close=True)
            return
        raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if self.door.offload is not None:  # a shared store: commits wait for its disk
            status, body, headers = await loop.run_in_executor(
                self.door.offload, self.door.handle_post, raw)
        else:
            status, body, headers = self.door.handle_post(raw)
        await _answer(send, status, body, headers)


def build_app(door: Door) -> Starlette:
    """The starlette app: lifespan closes the store; every request goes to ``DoorHTTP``."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        door.card_bytes()  # sign the first envelope before the first visitor
        try:
            yield
        finally:
            door.store.close()

    app = Starlette(lifespan=lifespan)
    app.router.redirect_slashes = False
    app.router.default = DoorHTTP(door)
    return app


MAX_HEADER_BYTES = 64 * 1024
_TIMEOUT_BODY = b'{"error":"request headers did not arrive in time"}'
_TIMEOUT_408 = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                b"content-length: " + str(len(_TIMEOUT_BODY)).encode() +
                b"\r\nconnection: close\r\n\r\n" + _TIMEOUT_BODY)


class _Coalescing:
    """A transport whose writes within one loop step leave as one ``send``.

    uvicorn writes a response's head and body separately; two syscalls per answer cost
    more CPU than the whole ladder's cheap rungs.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(data)

    def flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class SlowAwareH11(H11Protocol):
    """uvicorn's h11 protocol, plus a deadline for the request line and headers (408)."""

    header_seconds = 10.0
    _header_timer: asyncio.TimerHandle | None = None
    _started = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_Coalescing(transport, self.loop))  # type: ignore[arg-type]
        self._watch_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_headers()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _watch_headers(self) -> None:
        waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
        if waiting and self._header_timer is None:
            self._started = self.loop.time()
            self._header_timer = self.loop.call_later(self.header_seconds, self._headers_late)
        elif not waiting and self._header_timer is not None:
            self._stop_header_timer()
            self.scope[STARTED] = self._started  # type: ignore[literal-required]

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and self.conn.our_state is h11.IDLE \
                and not self.transport.is_closing():
            self.transport.write(_TIMEOUT_408)
            self.transport.close()


class SlowAwareHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the same header deadline, a header-size bound, and
    absolute-form request-targets kept as written (so they match no route: 404)."""

    header_seconds = 10.0
    _header_timer: asyncio.TimerHandle | None = None
    _awaiting_headers = True
    _header_bytes = 0
    _started = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_Coalescing(transport, self.loop))  # type: ignore[arg-type]
        self._arm()

    def _arm(self) -> None:
        if self._header_timer is None and not self.transport.is_closing():
            self._started = self.loop.time()
            self._header_timer = self.loop.call_later(self.header_seconds, self._headers_late)

    def _stop(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def data_received(self, data: bytes) -> None:
        if self._awaiting_headers:
            end = data.find(b"\r\n\r\n")
            self._header_bytes += len(data) if end < 0 else end
            if self._header_bytes > MAX_HEADER_BYTES:
                self._stop()
                self.send_400_response("Request headers too large.")
                return
            self._arm()
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._awaiting_headers = False
        self._stop()
        super().on_headers_complete()
        self.scope[STARTED] = self._started  # type: ignore[literal-required]
        if not self.url.startswith(b"/"):
            self.scope["raw_path"] = self.url  # absolute form: answers no route

    def on_response_complete(self) -> None:
        self._awaiting_headers = True
        self._header_bytes = 0
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._awaiting_headers and not self.transport.is_closing():
            self.transport.write(_TIMEOUT_408)
            self.transport.close()


def protocol_for(slow_seconds: float, kind: str = "auto") -> type[asyncio.Protocol]:
    """The HTTP protocol class: httptools when installed (cheaper per request), else h11."""
    base: type[asyncio.Protocol] = SlowAwareH11
    if kind in ("auto", "httptools") and _HAVE_HTTPTOOLS:
        base = SlowAwareHttpTools
    return type("DoorHTTPProtocol", (base,), {"header_seconds": slow_seconds})


def server_config(app: Starlette, door: Door, *, host: str, port: int,
                  http: str = "auto") -> uvicorn.Config:
    import uvicorn

    return uvicorn.Config(app, host=host, port=port,
                          http=protocol_for(door.config.slow_seconds, http),
                          lifespan="on", access_log=False, log_level="warning",
                          timeout_keep_alive=5, server_header=False, date_header=False,
                          proxy_headers=False,
                          limit_concurrency=door.config.max_connections or None)


def bind(host: str, port: int) -> socket.socket:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto named, so asyncio turns Nagle off on accepted sockets (a reply is two writes)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host.strip("[]"), port))
    sock.set_inheritable(True)
    return sock
