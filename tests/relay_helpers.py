"""A live relay for tests (real uvicorn on 127.0.0.1, an ephemeral port) and its clients' bodies."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from muretai_cli.artifacts.message import build_message, build_message_send
from muretai_cli.relay.app import build_app
from muretai_cli.relay.core import Relay
from muretai_cli.relay.limits import RelayConfig, RelayLimits
from muretai_cli.relay.store import RelayStore
from muretai_cli.seam import (
    SigningKey,
    seal_box,
    sign_envelope,
    sign_listen_token,
    sign_relay_send,
)
from muretai_cli.transport.binding import bind
from muretai_cli.transport.server import server_config
from muretai_cli.urls import parse_base_url
from muretai_cli.visit.relay import ListenAnswer, Waiting
from tests.servers import run_uvicorn

T = TypeVar("T")


@dataclass
class OnLoop:
    """A relay driven as its server drives it: every route on one event loop of its own (a
    PostgreSQL relay's group commit belongs to the loop that first used it)."""

    relay: Relay
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)

    def __call__(self, work: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(work)

    def close(self) -> None:
        self.relay.close()
        self.loop.close()


@dataclass
class LiveRelay:
    url: str  # the relay's URL as clients are given it
    relay: Relay

    @property
    def port(self) -> int:
        return int(self.url.split(":")[2].split("/")[0])  # always http://127.0.0.1:PORT...

    @property
    def origin(self) -> str:
        return parse_base_url(self.url, require_https=False).origin

    def post(self, route: str, body: bytes | dict[str, Any], **kw: Any) -> httpx.Response:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.post(f"{self.url}/{route}", content=raw, timeout=kw.pop("timeout", 40),
                          headers={"content-type": "application/json"}, **kw)

    def deposit(self, sender: SigningKey, to: SigningKey, text: str = "hi",
                **fields: Any) -> httpx.Response:
        return self.post("send", deposit_body(sender, to, text, **fields))

    @property
    def minute(self) -> int:
        """The minute on the relay's clock (a test's clock, when it was given one)."""
        return int(self.relay.clock() // 60)

    def listen(self, key: SigningKey, *, epoch: int = 1, wait: float = 0,
               **fields: Any) -> httpx.Response:
        return self.post("listen", listen_body(key, self.origin, epoch=epoch, wait=wait,
                                               minute=self.minute) | fields)

    def ack(self, key: SigningKey, ids: list[str], *, epoch: int = 1) -> httpx.Response:
        return self.post("ack", listen_body(key, self.origin, epoch=epoch, minute=self.minute)
                         | {"ids": ids})


def listener_epoch(db_url: str, did: str) -> int | None:
    """The listener epoch a PostgreSQL relay store holds for ``did`` (None: none yet). A
    listen claims its epoch before it looks for messages and is held: a poll whose epoch is
    there has been taken by its relay, not merely sent."""
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as conn:
        row = conn.execute("SELECT epoch FROM relay.relay_listeners WHERE did = %s",
                           (did,)).fetchone()
    return None if row is None else int(row[0])


def deposit_body(sender: SigningKey, to: SigningKey, text: str = "hi", *,
                 deposit_id: str | None = None, blob: str | None = None) -> dict[str, Any]:
    """A deposit as a client makes one: ``text`` sealed to ``to``, signed by ``sender``."""
    deposit_id = deposit_id or secrets.token_hex(16)
    blob = blob if blob is not None else seal_box(sender, to.enc_pub, text.encode(), ad=b"")
    return {"to": to.did, "from": sender.did, "from_enc": sender.enc_pub, "id": deposit_id,
            "blob": blob, "sig": sign_relay_send(sender, to=to.did, deposit_id=deposit_id,
                                                 blob=blob)}


def signed_deposit(relay: LiveRelay, sender: SigningKey, to: SigningKey, text: str) -> str:
    """A signed message/send for ``to``, sealed and deposited over HTTP as ``op dm`` would:
    its messageId."""
    env = sign_envelope(sender, to=to.did, text=text, timestamp=int(time.time()))
    message = build_message(env)
    blob = seal_box(sender, to.enc_pub, json.dumps(build_message_send(message, 1)).encode(),
                    ad=b"")
    answer = relay.post("send", deposit_body(sender, to, blob=blob))
    assert answer.status_code == 200, answer.text
    return str(message["messageId"])


def listen_body(key: SigningKey, origin: str, *, epoch: int = 1, wait: float | None = None,
                minute: int | None = None) -> dict[str, Any]:
    minute = int(time.time() // 60) if minute is None else minute
    body: dict[str, Any] = {"did": key.did, "minute": minute, "epoch": epoch,
                            "token": sign_listen_token(key, minute=minute, origin=origin)}
    if wait is not None:
        body["wait"] = wait
    return body


@contextmanager
def live_relay(db: Path | str, *, path: str = "", url: str | None = None,
               slow_seconds: float = 10.0, max_connections: int = 1000,
               max_per_client: int = 100, idle_seconds: float = 5.0, http: str = "auto",
               clock: Callable[[], float] = time.time, **limits: Any) -> Iterator[LiveRelay]:
    """A relay on an ephemeral port, served by the shared transport as ``relay serve`` does;
    ``url`` may spell its own URL another way (``{port}``); ``clock`` is what it reads the
    time from (a test's ``tests.clock.Clock``)."""
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    own = (url or "http://127.0.0.1:{port}" + path).format(port=port)
    config = RelayConfig(parse_base_url(own, require_https=False), RelayLimits(**limits),
                         slow_seconds=slow_seconds, max_connections=max_connections,
                         max_per_client=max_per_client, idle_seconds=idle_seconds)
    relay = Relay(config, RelayStore.open(db), clock=clock)
    with run_uvicorn(server_config(build_app(relay), host="127.0.0.1", port=port,
                                   slow_seconds=slow_seconds, max_connections=max_connections,
                                   max_per_client=max_per_client, idle_seconds=idle_seconds,
                                   http=http),
                     sock):
        yield LiveRelay(f"http://127.0.0.1:{port}{path}", relay)


def fill_mailbox(relay_db: Path, bob: SigningKey, count: int) -> dict[str, str]:
    """``count`` signed, sealed message/send deposits for bob, straight into the relay's
    mailbox table (the relay's own deposit path is tested elsewhere); messageId -> text."""
    senders = [SigningKey.generate() for _ in range(3)]
    now = int(time.time())
    texts: dict[str, str] = {}
    store = RelayStore.open(relay_db)
    try:
        for i in range(count):
            sender = senders[i % len(senders)]
            env = sign_envelope(sender, to=bob.did, text=f"message {i}", timestamp=now,
                                context_id="c-kill")
            message = build_message(env)
            texts[message["messageId"]] = f"message {i}"
            blob = seal_box(sender, bob.enc_pub,
                            json.dumps(build_message_send(message, i)).encode(), ad=b"")
            outcome = store.deposit(to=bob.did, sender=sender.did, sender_enc=sender.enc_pub,
                                    deposit_id=os.urandom(16).hex(), blob=blob, now=now,
                                    max_waiting=10_000)
            assert outcome == "queued"
    finally:
        store.close()
    return texts


class OneAnswer:
    """A relay client (for ``TurnCheck``, no relay behind it) that lists some deposits
    once, then nothing; records what is acked."""

    def __init__(self, items: list[Waiting]) -> None:
        self.items = items
        self.acked: list[str] = []

    def listen(self, key: SigningKey, *, epoch: int, wait: int) -> ListenAnswer:
        items, self.items = self.items, []
        return ListenAnswer(items, False)

    def ack(self, key: SigningKey, *, epoch: int, ids: list[str]) -> int:
        self.acked += ids
        return len(ids)

    @contextmanager
    def kept_alive(self) -> Iterator[None]:
        yield


def relay_identities(relay: LiveRelay, *names: str, publish: bool = True,
                     policy: str | None = None) -> dict[str, SigningKey]:
    """New identities on ``relay``, each with its card published there (unless not
    ``publish``) and its consent ``policy`` set when given: name -> key."""
    from muretai_cli.home import KeyStore, keys_dir
    from tests.cli_helpers import new_identity, run

    keys = {}
    for name in names:
        new_identity(name)
        assert run("id", "relay", name, relay.url).exit_code == 0
        if publish:
            assert run("card", "publish", "--as", name).exit_code == 0
        if policy is not None:
            assert run("op", "--as", name, "policy", policy).exit_code == 0
        keys[name] = KeyStore(keys_dir()).load(name).signing_key()
    return keys
