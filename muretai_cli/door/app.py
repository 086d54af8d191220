"""HTTP for the door: the starlette app (served by ``muretai_cli.transport``).

Routes hang off the ``--url`` path and are matched exactly, on the raw request-target:
``<path>/.well-known/agent-card.json`` (and ``agent.json``, the same bytes),
``<path>/.well-known/agent-card.sig.json``,
``<path>/.well-known/muretai-revocations.json`` (the identity's signed list of introductions
it revoked), ``POST <path>`` and ``GET <path>`` (a short
notice naming the card, with ``Link: <card>; rel="service-desc"``). Everything else is 404
(a query string included); ``OPTIONS`` on an advertised address is 204 with its ``Allow``,
another method there is 405.

Bounds: a body over 1 MiB is 413 before it is parsed (by ``Content-Length``, or as it
streams); the request line, headers and body must all arrive within ``slow_seconds`` (10 s)
of the door starting to wait for them, else 408 (``transport.asgi.read_body`` and the
transport's protocols); malformed framing is uvicorn's 400.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

from starlette.applications import Starlette

from muretai_cli.db import DatabaseUnavailable
from muretai_cli.door.core import JSON_HEADERS, UNAVAILABLE, Door
from muretai_cli.seam import MAX_BODY
from muretai_cli.transport.asgi import (
    BodyRefused,
    Headers,
    Receive,
    Scope,
    Send,
    answer,
    has_query,
    read_body,
)
from muretai_cli.urls import CARD_PATH, CARD_SIG_PATH, LEGACY_CARD_PATH, REVOCATIONS_PATH

_CORS = ((b"access-control-allow-origin", b"*"),
         (b"access-control-allow-headers", b"content-type"),
         (b"access-control-max-age", b"600"))
_GET_ALLOW = b"GET, HEAD, OPTIONS"
_INTERNAL = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}'
_POST_ALLOW = b"GET, HEAD, POST, OPTIONS"  # the door's address: notice and door
_WBA_HEADERS = frozenset((b"signature", b"signature-input", b"signature-agent"))


def _plain(status: int, error: str) -> tuple[int, bytes, Headers]:
    return status, json.dumps({"error": error}).encode(), JSON_HEADERS


def _signature_headers(scope: Scope) -> dict[str, str] | None:
    """The request's headers (lowercased names, repeats joined) when it carries Web Bot Auth
    headers; None otherwise, after one cheap pass over the names."""
    raw: list[tuple[bytes, bytes]] = scope["headers"]
    if not any(name.lower() in _WBA_HEADERS for name, _ in raw):
        return None
    headers: dict[str, str] = {}
    for name, value in raw:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


class DoorHTTP:
    """The exact-path dispatcher behind the starlette app."""

    def __init__(self, door: Door) -> None:
        from muretai_cli.door.wba import WbaCheck
        from muretai_cli.seam import authority_of

        self.door = door
        # Web Bot Auth on a knock is verified for this door's own @authority (its --url).
        self.wba = WbaCheck(authority_of(door.origin), clock=door.clock,
                            allow_private=door.config.wba_allow_private)
        base = door.config.url.path
        self.post_path = (base or "/").encode()
        self.cards = {(base + CARD_PATH).encode(): "card",
                      (base + LEGACY_CARD_PATH).encode(): "card",
                      (base + CARD_SIG_PATH).encode(): "sig",
                      (base + REVOCATIONS_PATH).encode(): "revocations"}
        # Web identity lives at the origin's well-known paths (RFC 8615), whatever the base.
        from muretai_cli.seam import DID_CONFIGURATION_PATH, DIRECTORY_PATH

        self.cards[DIRECTORY_PATH.encode()] = "wba"
        if door.config.did_configuration is not None:
            self.cards[DID_CONFIGURATION_PATH.encode()] = "dlc"
        self.slow = door.config.slow_seconds
        from muretai_cli.door.publish import notice

        self.notice = notice(door.config.name, door.did, door.config.url.join(CARD_PATH),
                             door.terms["endpoint"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            await self._route(scope, receive, send)
        except Exception:  # the last word: never a stack trace, never a closed socket
            from muretai_cli.door.core import log

            log.exception("door: internal error")
            with contextlib.suppress(Exception):
                await answer(send, 200, _INTERNAL, JSON_HEADERS, close=True)

    def _document(self, kind: str) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
        if kind == "card":
            return self.door.card_bytes(), JSON_HEADERS
        if kind == "sig":
            return self.door.envelope_bytes(), JSON_HEADERS
        if kind == "wba":
            return self.door.wba_directory()
        if kind == "revocations":
            return self.door.revocations_bytes(), JSON_HEADERS
        return self.door.config.did_configuration or b"{}", JSON_HEADERS

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("raw_path") or scope["path"].encode()
        method = scope["method"]
        if has_query(scope):
            await answer(send, *_plain(404, "not found"))
            return
        kind = self.cards.get(path)
        if kind is not None:
            if method in ("GET", "HEAD"):
                try:
                    body, headers = self._document(kind)
                except DatabaseUnavailable:
                    await answer(send, *UNAVAILABLE, head=method == "HEAD")
                    return
                await answer(send, 200, body, headers, head=method == "HEAD")
            elif method == "OPTIONS":
                await answer(send, 204, b"", ((b"allow", _GET_ALLOW), *_CORS,
                                               (b"access-control-allow-methods", _GET_ALLOW)))
            else:
                await answer(send, *_plain(405, "method not allowed"))
            return
        if path != self.post_path:
            await answer(send, *_plain(404, "not found"))
            return
        if method == "POST":
            await self._post(scope, receive, send)
        elif method in ("GET", "HEAD"):
            await answer(send, 200, *self.notice, head=method == "HEAD")
        elif method == "OPTIONS":
            await answer(send, 204, b"", ((b"allow", _POST_ALLOW), *_CORS,
                                           (b"access-control-allow-methods", _POST_ALLOW)))
        else:
            status, body, headers = _plain(405, "method not allowed")
            await answer(send, status, body, ((b"allow", _POST_ALLOW), *headers))

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            raw = await read_body(scope, receive, limit=MAX_BODY, seconds=self.slow)
        except BodyRefused as exc:
            await answer(send, *_plain(exc.status, exc.reason), close=True)
            return
        if raw is None:
            return
        signed = _signature_headers(scope)
        # Recorded beside the message; never a reason to admit or refuse it (door/wba.py).
        wba = await self.wba.check(signed) if signed is not None else None
        door = self.door
        loop = asyncio.get_running_loop()
        reply, delivered = await door.receive_async(raw, wba)
        if delivered is not None and door.on_message is not None:
            outcome = await door.on_message.answer(delivered.message)  # off the loop
            if door.offload is not None:
                reply = await loop.run_in_executor(door.offload, door.answered, delivered,
                                                   outcome)
            else:
                reply = door.answered(delivered, outcome)
        await answer(send, *reply)


def build_app(door: Door) -> Starlette:
    """The starlette app: lifespan closes the door (its store); every request goes to
    ``DoorHTTP``."""

    http = DoorHTTP(door)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        door.card_bytes()  # sign the first envelope before the first visitor
        try:
            yield
        finally:
            http.wba.close()
            door.close()

    app = Starlette(lifespan=lifespan)
    app.router.redirect_slashes = False
    app.router.default = http
    return app
