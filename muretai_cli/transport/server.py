"""uvicorn, with the bounds a public server needs.

- The request line and headers must arrive within ``slow_seconds`` of the server starting
  to wait for them (408, then close); the time they took counts against the body too
  (``asgi.STARTED``).
- A request line and headers over ``MAX_HEADER_BYTES`` (16 KiB) are 400 on both parsers,
  whether they arrive in one read or many.
- A response's head and body leave in one ``send`` (``_Coalescing``).
- Admission (``Admission``): at most ``max_connections`` open connections, at most
  ``max_per_client`` from one peer address. A newcomer past the total evicts the connection
  idle longest (one waiting for its next request for at least ``EVICT_IDLE_AFTER``); when none
  is idle, the request held open longest (a long-poll the app marked through ``HOLDABLE``) is
  answered at once and its connection closed; only when neither exists is it refused (503,
  then close). So idle sockets and held long-polls cannot starve requests, and a flood from
  one address cannot fill the server.
- A connection waiting for a request (its first, or the next on keep-alive) closes after
  ``idle_seconds``.
- An answer sent before its request's body was all read (a 404, a 413): the rest of the body
  is read and dropped, never parsed as a request, until the request's head+body deadline;
  then the connection closes (``_HeaderDeadline._drain``).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    _HAVE_HTTPTOOLS = True
except ImportError:  # pragma: no cover - httptools is optional for uvicorn
    _HAVE_HTTPTOOLS = False
    HttpToolsProtocol = H11Protocol  # type: ignore[misc,assignment]

from muretai_cli.transport import IDLE_SECONDS, MAX_CONNECTIONS, MAX_PER_CLIENT
from muretai_cli.transport.asgi import HAS_QUERY, HOLDABLE, STARTED

if TYPE_CHECKING:
    import uvicorn

MAX_HEADER_BYTES = 16 * 1024  # request line and headers, on both parsers
EVICT_IDLE_AFTER = 0.25  # younger idle connections are likely about to send their request


def refusal(status: bytes, code: str, message: str) -> bytes:
    """A whole HTTP response the transport sends on its own, then closes: the refusal shape
    of the relay and the door, ``{"error": CODE, "message": TEXT}`` (JSON, never plain text).
    ``status`` is the status line's rest, e.g. ``b"400 Bad Request"``."""
    import json

    body = json.dumps({"error": code, "message": message}, separators=(",", ":")).encode()
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n"
            + body)


_TIMEOUT_408 = refusal(b"408 Request Timeout", "timeout",
                       "request headers did not arrive in time")
_BUSY_503 = refusal(b"503 Service Unavailable", "busy", "too many connections; retry later")
# what uvicorn would answer in plain text: a request neither parser can read, a head too long
_MALFORMED_400 = refusal(b"400 Bad Request", "malformed", "the request is not valid HTTP/1.1")
_HEAD_TOO_LARGE_400 = refusal(b"400 Bad Request", "too-large",
                              f"the request line and headers exceed {MAX_HEADER_BYTES} bytes")


class Admission:
    """Who may hold a connection to one server: the total and per-address bounds, and which
    connections are idle (waiting for a request) and since when, oldest first."""

    def __init__(self, max_connections: int, max_per_client: int) -> None:
        self.max_connections = max_connections  # 0: no bound
        self.max_per_client = max_per_client  # 0: no bound
        self.open: set[_Admitted] = set()
        self.per_client: Counter[str] = Counter()
        self.idle: dict[_Admitted, float] = {}  # insertion order: idle longest first
        # requests held open (long-polls), held longest first, and how to end each now
        self.holding: dict[_Admitted, Callable[[], None]] = {}

    def admit(self, conn: _Admitted, now: float) -> bool:
        """Take ``conn`` in (evicting the longest-idle connection if full), or say no."""
        client = conn.peer
        if self.max_per_client and self.per_client[client] >= self.max_per_client:
            return False
        if self.max_connections and len(self.open) >= self.max_connections:
            oldest = next(iter(self.idle.items()), None)
            if oldest is not None and now - oldest[1] >= EVICT_IDLE_AFTER:
                oldest[0].evict()
            elif self.holding:
                held, release = next(iter(self.holding.items()))
                held.end_hold(release)
            else:
                return False
        self.open.add(conn)
        self.per_client[client] += 1
        self.idle[conn] = now
        return True

    def release(self, conn: _Admitted) -> None:
        self.holding.pop(conn, None)
        if conn in self.open:
            self.open.discard(conn)
            self.idle.pop(conn, None)
            self.per_client[conn.peer] -= 1
            if self.per_client[conn.peer] <= 0:
                del self.per_client[conn.peer]

    def hold(self, conn: _Admitted, release: Callable[[], None]) -> None:
        if conn in self.open:
            self.holding[conn] = release

    def unhold(self, conn: _Admitted) -> None:
        self.holding.pop(conn, None)

    def busy(self, conn: _Admitted) -> None:
        self.idle.pop(conn, None)

    def waiting(self, conn: _Admitted, now: float) -> None:
        if conn in self.open:
            self.idle.pop(conn, None)
            self.idle[conn] = now


class _Admitted:
    """Admission and the idle timeout, for either uvicorn protocol (mixed in first)."""

    admission: Admission
    idle_seconds = IDLE_SECONDS
    peer = ""
    _ending = False  # its held request was ended to make room: close after the answer
    _idle_timer: asyncio.TimerHandle | None = None
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop

    def _open(self) -> None:
        name = self.transport.get_extra_info("peername")
        self.peer = str(name[0]) if isinstance(name, tuple) and name else ""
        if not self.admission.admit(self, self.loop.time()):
            self.transport.write(_BUSY_503)
            self.transport.close()
            return
        self._arm_idle()

    def _arm_idle(self) -> None:
        self._stop_idle()
        if not self.transport.is_closing():
            self._idle_timer = self.loop.call_later(self.idle_seconds, self._idle_over)

    def _stop_idle(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _got_data(self) -> None:
        self._stop_idle()
        self.admission.busy(self)

    def _holdable(self, release: Callable[[], None]) -> Callable[[], None]:
        """The ``HOLDABLE`` hook put in each request's scope."""
        self.admission.hold(self, release)
        return lambda: self.admission.unhold(self)

    def end_hold(self, release: Callable[[], None]) -> None:
        """Give this connection's place to a newcomer: its held request is answered now
        (``release``), and the connection closes once that answer is out."""
        self._ending = True
        self.admission.release(self)
        release()

    def _now_waiting(self) -> None:
        """The response is complete and no further request is pending: idle again."""
        if self._ending:
            self.transport.close()
            return
        if not self.transport.is_closing():
            self.admission.waiting(self, self.loop.time())
            self._arm_idle()

    def _idle_over(self) -> None:
        self._idle_timer = None
        if self in self.admission.idle:
            self.evict()

    def evict(self) -> None:
        """Close an idle connection (nothing in flight) and give its place back at once."""
        self._stop_idle()
        self.admission.release(self)
        if not self.transport.is_closing():
            self.transport.close()

    def _closed(self) -> None:
        self._stop_idle()
        self.admission.release(self)


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


class _JsonRefusals:
    """uvicorn answers a request its parser refuses with a plain-text 400 of its own
    (``send_400_response``, on both protocols); ours is the JSON refusal, then close."""

    transport: asyncio.Transport

    def send_400_response(self, msg: str) -> None:
        del msg  # the parser's words; the answer says it in the project's shape
        self._refuse(_MALFORMED_400)

    def _refuse(self, response: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(response)
            self.transport.close()


class _HeaderDeadline(_JsonRefusals):
    """The deadline for a request's line and headers, one for both protocol classes: armed
    while a connection waits for a request head, cancelled once the head is complete; past
    it, 408 and close. Each protocol says when it is waiting (``_awaiting_head``). And the
    head's size bound, counted over every read of it (``_head_too_large``)."""

    header_seconds = 10.0
    _header_bytes = 0
    _header_timer: asyncio.TimerHandle | None = None
    _drain_timer: asyncio.TimerHandle | None = None
    _started = 0.0
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    def _awaiting_head(self) -> bool:
        raise NotImplementedError

    def _head_too_large(self, data: bytes) -> bool:
        """Count ``data``, read while a head is awaited, against ``MAX_HEADER_BYTES``; past
        it, 400 and close (True: drop ``data``)."""
        end = data.find(b"\r\n\r\n")
        self._header_bytes += len(data) if end < 0 else end
        if self._header_bytes <= MAX_HEADER_BYTES:
            return False
        self._stop_header_timer()
        self._refuse(_HEAD_TOO_LARGE_400)
        return True

    def _arm_header_timer(self) -> None:
        if self._header_timer is None and not self.transport.is_closing():
            self._started = self.loop.time()
            self._header_timer = self.loop.call_later(self.header_seconds, self._headers_late)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._awaiting_head() and not self.transport.is_closing():
            self.transport.write(_TIMEOUT_408)
            self.transport.close()

    def _drain(self) -> None:
        """The answer left before the request's body was all read: the parser goes on
        reading (and dropping) the body, within the request's one deadline; past it, close."""
        if self._drain_timer is None and not self.transport.is_closing():
            left = self._started + self.header_seconds - self.loop.time()
            self._drain_timer = self.loop.call_later(max(0.0, left), self._drain_late)

    def _draining(self) -> bool:
        return self._drain_timer is not None

    def _drained(self) -> None:
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None

    def _drain_late(self) -> None:
        self._drain_timer = None
        if not self.transport.is_closing():
            self.transport.close()


class SlowAwareH11(_Admitted, _HeaderDeadline, H11Protocol):
    """uvicorn's h11 protocol, plus a deadline for the request line and headers (408)."""

    _queried = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_Coalescing(transport, self.loop))  # type: ignore[arg-type]
        self._open()
        next_event = self.conn.next_event

        def noting_queries() -> Any:  # h11 keeps the target; uvicorn drops an empty "?"
            event = next_event()
            if isinstance(event, h11.Request):
                self._queried = b"?" in event.target
            return event

        self.conn.next_event = noting_queries  # type: ignore[method-assign]
        self._watch_headers()

    def data_received(self, data: bytes) -> None:
        self._got_data()
        # h11 bounds only a head split over reads
        if self.conn.their_state is h11.IDLE and self._head_too_large(data):
            return
        super().data_received(data)
        self._mark_query()
        if self._draining() and self.conn.their_state is not h11.SEND_BODY:
            self._drained()  # the unread body is over: h11 started the next cycle
            self._idle_if_done()
        self._watch_headers()

    def on_response_complete(self) -> None:
        self._header_bytes = 0
        super().on_response_complete()
        self._mark_query()
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            self._drain()
        self._idle_if_done()
        self._watch_headers()

    def _idle_if_done(self) -> None:
        if self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]:
            self._now_waiting()

    def _mark_query(self) -> None:
        if self._queried and self.scope is not None:
            self.scope[HAS_QUERY] = True  # type: ignore[literal-required]
            self._queried = False

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        self._drained()
        self._closed()
        super().connection_lost(exc)

    def _awaiting_head(self) -> bool:
        return self.conn.their_state is h11.IDLE and self.conn.our_state is h11.IDLE

    def _watch_headers(self) -> None:
        waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
        if waiting:
            self._arm_header_timer()
        elif self._header_timer is not None:
            self._stop_header_timer()
            if self.scope is not None:  # None: the head was malformed (h11 said 400)
                self.scope[STARTED] = self._started  # type: ignore[literal-required]
                self.scope[HOLDABLE] = self._holdable  # type: ignore[literal-required]


class SlowAwareHttpTools(_Admitted, _HeaderDeadline, HttpToolsProtocol):
    """uvicorn's httptools protocol, with the same header deadline, a header-size bound, and
    absolute-form request-targets kept as written (so they match no route: 404)."""

    _awaiting_headers = True
    _in_body = False  # the parser is between a request's head and its end

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_Coalescing(transport, self.loop))  # type: ignore[arg-type]
        self._open()
        self._arm_header_timer()

    def _awaiting_head(self) -> bool:
        return self._awaiting_headers

    def data_received(self, data: bytes) -> None:
        self._got_data()
        if self._awaiting_headers:
            if self._head_too_large(data):
                return
            self._arm_header_timer()
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._awaiting_headers = False
        self._in_body = True
        self._stop_header_timer()
        super().on_headers_complete()
        self.scope[STARTED] = self._started  # type: ignore[literal-required]
        self.scope[HOLDABLE] = self._holdable  # type: ignore[literal-required]
        if b"?" in self.url:
            self.scope[HAS_QUERY] = True  # type: ignore[literal-required]
        if not self.url.startswith(b"/"):
            self.scope["raw_path"] = self.url  # absolute form: answers no route

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_body = False
        if self._draining():  # the body an early answer left unread is over
            self._drained()
            self._awaiting_headers = True
            if not self.pipeline:
                self._now_waiting()

    def on_response_complete(self) -> None:
        self._header_bytes = 0
        super().on_response_complete()
        if self._in_body:  # the parser is inside a body: what comes next is body, not a head
            if self.cycle.response_complete:
                self._drain()  # this request was answered before its body was all read
            return  # else the body of a pipelined request, answered in its turn
        self._awaiting_headers = True
        if not self.pipeline:
            self._now_waiting()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        self._drained()
        self._closed()
        super().connection_lost(exc)


def protocol_for(slow_seconds: float, kind: str = "auto", *,
                 max_connections: int = MAX_CONNECTIONS, max_per_client: int = MAX_PER_CLIENT,
                 idle_seconds: float = IDLE_SECONDS) -> type[asyncio.Protocol]:
    """The HTTP protocol class for one server (its own ``Admission``): httptools when
    installed (cheaper per request), else h11. A bound of 0 means none."""
    base: type[asyncio.Protocol] = SlowAwareH11
    if kind in ("auto", "httptools") and _HAVE_HTTPTOOLS:
        base = SlowAwareHttpTools
    return type("BoundedHTTPProtocol", (base,), {
        "header_seconds": slow_seconds, "idle_seconds": idle_seconds,
        "admission": Admission(max_connections, max_per_client)})


def server_config(app: Any, *, host: str, port: int, slow_seconds: float,
                  max_connections: int = MAX_CONNECTIONS,
                  max_per_client: int = MAX_PER_CLIENT, idle_seconds: float = IDLE_SECONDS,
                  http: str = "auto") -> uvicorn.Config:
    """uvicorn's config for ``app`` with our protocol and its admission (which replaces
    uvicorn's ``limit_concurrency``: that one refuses every request once idle sockets fill it)."""
    import uvicorn

    return uvicorn.Config(app, host=host, port=port,
                          http=protocol_for(slow_seconds, http,
                                            max_connections=max_connections,
                                            max_per_client=max_per_client,
                                            idle_seconds=idle_seconds),
                          lifespan="on", access_log=False, log_level="warning",
                          timeout_keep_alive=max(1, round(idle_seconds)),
                          server_header=False, date_header=True, proxy_headers=False)
