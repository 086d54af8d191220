"""What an ASGI app behind our transport needs: one response, one bounded body read.

The protocol (``server.py``) stamps each request's scope with the moment it began waiting
for the request line (``STARTED``); ``read_body`` holds the body to the same deadline, so
head and body together get ``seconds``, not ``seconds`` each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = tuple[tuple[bytes, bytes], ...]

STARTED = "muretai.request_started"  # scope key: when the server began awaiting this request
# scope key: the request-target carried a '?' (uvicorn drops an empty query string: "/?")
HAS_QUERY = "muretai.has_query"


# scope key: ``holdable(release) -> done``, the server's hook for a request held open (a
# long-poll): past its connection bound, the server ends the oldest held one by calling its
# ``release`` (the app answers it at once, and the connection closes after the answer)
# rather than refuse a newcomer; the app calls ``done()`` when it stops holding.
HOLDABLE = "muretai.holdable"


def has_query(scope: Scope) -> bool:
    """Whether the request-target had a query part, even an empty one."""
    return bool(scope.get("query_string") or scope.get(HAS_QUERY))


class BodyRefused(Exception):
    """The body cannot be read: its HTTP status, a reason code and a short reason."""

    def __init__(self, status: int, code: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.code = code  # malformed | too-large | timeout
        self.reason = reason


async def answer(send: Send, status: int, body: bytes, headers: Headers, *,
                 head: bool = False, close: bool = False) -> None:
    """One complete response with its ``content-length`` (the body left out for HEAD)."""
    out = [*headers, (b"content-length", str(len(body)).encode())]
    if close:
        out.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def read_body(scope: Scope, receive: Receive, *, limit: int,
                    seconds: float) -> bytes | None:
    """The request body, at most ``limit`` bytes, complete within ``seconds`` of the request
    starting; None when the client went away. Raises ``BodyRefused`` (400 bad length,
    413 too large — declared or as it streams —, 408 too slow)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                raise BodyRefused(400, "malformed", "bad content-length") from None
            if declared > limit:
                raise BodyRefused(413, "too-large", "request body too large")
    chunks: list[bytes] = []
    size = 0
    started = scope.get(STARTED) or asyncio.get_running_loop().time()
    try:
        async with asyncio.timeout_at(started + seconds):
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise BodyRefused(413, "too-large", "request body too large")
                chunks.append(chunk)
                more = message.get("more_body", False)
    except TimeoutError:
        raise BodyRefused(408, "timeout", "request body did not arrive in time") from None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
