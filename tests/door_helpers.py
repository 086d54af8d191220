"""Doors for tests. ``live_door``: real uvicorn on 127.0.0.1, an ephemeral port, always
stopped (for what the socket and the transport do). ``local_door``: the same door's ASGI app
driven in-process by starlette's TestClient, no socket (for the ladder and the policy)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from muretai_cli.artifacts.message import build_message, build_message_send
from muretai_cli.door.app import build_app
from muretai_cli.door.core import Door, DoorConfig
from muretai_cli.door.respond import OnMessage
from muretai_cli.home import KeyStore, keys_dir
from muretai_cli.inbox.store import IdentityStore, db_path, open_identity_store
from muretai_cli.seam import SigningKey, sign_envelope
from muretai_cli.transport.binding import bind
from muretai_cli.transport.server import server_config
from muretai_cli.urls import parse_base_url
from tests.servers import run_uvicorn


@dataclass
class Live:
    base: str  # the base URL (card url), path included
    origin: str
    door: Door
    key: SigningKey
    name: str
    address: str = ""  # where it really listens (http://127.0.0.1:PORT)
    db: str | None = None  # the store's --db (None: the identity's SQLite file)
    http: InProcess | None = None  # local_door's; None: over the socket

    @property
    def did(self) -> str:
        return self.key.did

    def request(self, method: str, url: str, **kw: Any) -> httpx.Response:
        """Any request to the door (absolute ``url``), over its socket or in-process."""
        if self.http is not None:
            return self.http.request(method, url, **kw)
        return httpx.request(method, url, **kw)

    def get(self, url: str, **kw: Any) -> httpx.Response:
        return self.request("GET", url, **kw)

    def post(self, body: bytes | dict[str, Any], **kw: Any) -> httpx.Response:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.request("POST", kw.pop("url", self.base or self.origin), content=raw,
                            headers={"content-type": "application/json"}, timeout=10, **kw)

    def rpc(self, body: bytes | dict[str, Any]) -> dict[str, Any]:
        resp = self.post(body)
        doc: dict[str, Any] = resp.json()
        doc["_status"] = resp.status_code
        return doc

    def store(self) -> IdentityStore:
        """A second connection, as the owner's commands open one."""
        return open_identity_store(self.did, self.db) if self.db else IdentityStore(db_path(self.did))


def pinned_epoch(door: Live, root: str) -> int | None:
    """The epoch of the KeyState the door has pinned for ``root`` (None: no pin)."""
    from muretai_cli.inbox.store.keystate_pins import KeyStatePinStore

    store = door.store()
    try:
        record = KeyStatePinStore(store.db).get(root)
    finally:
        store.close()
    return None if record is None else int(record["epoch"])


def send_request(sender: SigningKey, to: str, text: str = "hello", *, now: int | None = None,
                 mid: str | None = None, ctx: str | None = None, rid: Any = 1) -> dict[str, Any]:
    env = sign_envelope(sender, to=to, text=text, timestamp=int(time.time()) if now is None
                        else now, message_id=mid, context_id=ctx)
    return build_message_send(build_message(env), rid)


def code_of(doc: dict[str, Any]) -> int | None:
    err = doc.get("error")
    return err["code"] if isinstance(err, dict) else None


def reason_of(doc: dict[str, Any]) -> str | None:
    """A JSON-RPC error's ``data.reason`` (None when there is none)."""
    return ((doc.get("error") or {}).get("data") or {}).get("reason")


def is_fresh(doc: dict[str, Any]) -> bool:
    """Whether an answer is a new acceptance (a result, not a recovered one)."""
    return "result" in doc and not doc["result"]["metadata"].get("recovered")


@contextmanager
def live_door(policy: str = "open", *, path: str = "", rate_per_sender: int = 0,
              rate_total: int = 0, slow: float = 10.0, name: str = "door",
              http: str = "auto", url: str | None = None, db: str | None = None,
              max_connections: int = 1000, max_per_client: int = 100, idle: float = 5.0,
              wba_allow_private: bool = False, on_message: OnMessage | None = None,
              on_event: Callable[[dict[str, Any]], None] | None = None) -> Iterator[Live]:
    """A door on an ephemeral port; ``url`` is the base URL it publishes (default: its own,
    another when something sits in front of it, as a TLS terminator would); ``db`` its
    store's ``--db`` (a PostgreSQL URL; default the identity's SQLite file)."""
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    door = make_door(policy, url or f"http://127.0.0.1:{port}{path}", name=name, db=db,
                     rate_per_sender=rate_per_sender, rate_total=rate_total, slow=slow,
                     wba_allow_private=wba_allow_private, on_message=on_message,
                     on_event=on_event)
    config = server_config(build_app(door), host="127.0.0.1", port=port, http=http,
                           slow_seconds=slow, max_connections=max_connections,
                           max_per_client=max_per_client, idle_seconds=idle)
    with run_uvicorn(config, sock):
        yield Live(door.config.url.text, door.origin, door, door.key, name,
                   f"http://127.0.0.1:{port}", db)


def make_door(policy: str, url: str, *, name: str = "door", db: str | None = None,
              rate_per_sender: int = 0, rate_total: int = 0, slow: float = 10.0,
              wba_allow_private: bool = False, on_message: OnMessage | None = None,
              on_event: Callable[[dict[str, Any]], None] | None = None,
              shared_rate: bool = False, clock: Callable[[], float] = time.time) -> Door:
    """A door for identity ``name`` (made on first use) publishing ``url``, reading the
    time from ``clock`` (a test's ``tests.clock.Clock``)."""
    store_keys = KeyStore(keys_dir())
    ident = store_keys.load(name) if store_keys.path_of(name).exists() else store_keys.create(name)
    config = DoorConfig(name=name, url=parse_base_url(url),
                        policy=policy,  # type: ignore[arg-type]
                        rate_per_sender=rate_per_sender, rate_total=rate_total,
                        slow_seconds=slow, wba_allow_private=wba_allow_private,
                        shared_rate=shared_rate)
    if db:
        from tests.store_helpers import init_door_store

        init_door_store(ident.did, db)
    return Door(ident.signing_key(), config, open_identity_store(ident.did, db) if db
                else IdentityStore(db_path(ident.did)), on_message=on_message, on_event=on_event,
                clock=clock)


@dataclass
class InProcess:
    """Requests to an ASGI app in this process (httpx.ASGITransport): no socket, no server."""

    app: Any

    def request(self, method: str, url: str, **kw: Any) -> httpx.Response:
        async def exchange() -> httpx.Response:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app)) as client:
                return await client.request(method, url, **kw)

        return asyncio.run(exchange())


@contextmanager
def local_door(policy: str = "open", *, path: str = "", rate_per_sender: int = 0,
               rate_total: int = 0, name: str = "door") -> Iterator[Live]:
    """The door's whole ASGI app (routes, body reading, ladder, policy, store) in-process:
    no socket, port or server thread. Its URL names a port nothing listens on."""
    door = make_door(policy, f"http://127.0.0.1:9{path}", name=name,
                     rate_per_sender=rate_per_sender, rate_total=rate_total)
    try:
        yield Live(door.config.url.text, door.origin, door, door.key, name,
                   http=InProcess(build_app(door)))
    finally:
        door.store.close()


def raw_socket(origin: str, *, timeout: float = 5.0, source: str | None = None
               ) -> socket.socket:
    """A plain TCP connection to a server under test (``http://host:port``), optionally
    from another loopback ``source`` address."""
    host, port = origin.split("//", 1)[1].rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout,
                                    source_address=(source, 0) if source else None)


def raw_exchange(origin: str, data: bytes, *, wait: float = 5.0,
                 then: bytes | None = None) -> bytes:
    """Write raw bytes to the door and read until it closes (or ``wait`` passes)."""
    with raw_socket(origin, timeout=wait) as s:
        s.sendall(data)
        if then is not None:
            s.sendall(then)
        chunks = []
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks) and _complete(b"".join(chunks)):
                    break
        except (TimeoutError, ConnectionResetError):
            pass
        return b"".join(chunks)


def _complete(buf: bytes) -> bool:
    head, _, body = buf.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


def refusal_of(response: bytes) -> tuple[int, str]:
    """A raw answer's status and its refusal code: the body must be the JSON refusal shape
    ``{"error": CODE, "message": TEXT}``, labelled as JSON."""
    head, _, body = response.partition(b"\r\n\r\n")
    assert b"\r\ncontent-type: application/json" in head.lower(), head
    doc = json.loads(body)
    assert sorted(doc) == ["error", "message"] and isinstance(doc["message"], str), doc
    return status_of(response), str(doc["error"])
