"""A fixture site we control: our real door behind a thin ASGI layer that can replace any
answer, so one producer mutation at a time can be switched on (starlette under uvicorn)."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from muretai_cli.door.app import build_app
from muretai_cli.door.core import Door, DoorConfig
from muretai_cli.home import KeyStore, keys_dir
from muretai_cli.inbox.store import IdentityStore, db_path
from muretai_cli.seam import (
    DID_CONFIGURATION_PATH,
    DIRECTORY_PATH,
    SigningKey,
    canonical_bytes,
    did_configuration,
    sign_directory,
    sign_domain_linkage,
)
from muretai_cli.transport.binding import bind
from muretai_cli.transport.server import server_config
from muretai_cli.urls import CARD_PATH, CARD_SIG_PATH, LEGACY_CARD_PATH, parse_base_url
from tests.servers import run_uvicorn

Answer = tuple[int, dict[str, str], bytes]
_DOOR_PATHS = frozenset({"/", CARD_PATH, LEGACY_CARD_PATH, CARD_SIG_PATH, DIRECTORY_PATH})
JSON = {"content-type": "application/json", "access-control-allow-origin": "*"}
Scope = MutableMapping[str, Any]
ASGI = Callable[[Scope, Any, Any], Awaitable[None]]


@dataclass
class FixtureSite:
    base: str
    domain: str  # host:port, as a credential or @authority names it
    door: Door
    key: SigningKey
    inner: ASGI
    extras: dict[tuple[str, str], Answer] = field(default_factory=dict)
    overrides: dict[tuple[str, str], Answer] = field(default_factory=dict)
    catch_all: bool = False  # answer 200 with the same page for every path the door lacks
    catch_all_answer: Answer = (200, {"content-type": "text/html"},
                                b"<html><body>app</body></html>")

    def reset(self) -> None:
        self.overrides.clear()
        self.catch_all = False

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        route = (scope["method"], scope["path"])
        answer = self.overrides.get(route) or self.extras.get(route)
        if answer is None and self.catch_all and scope["method"] == "GET" \
                and scope["path"] not in _DOOR_PATHS:
            answer = self.catch_all_answer
        if answer is None:
            await self.inner(scope, receive, send)
            return
        status, headers, body = answer
        if scope["method"] == "POST":  # drain the request like a real server would
            more = True
            while more:
                more = (await receive()).get("more_body", False)
        await send({"type": "http.response.start", "status": status, "headers": [
            (k.encode(), v.encode()) for k, v in {**headers,
                                                   "content-length": str(len(body))}.items()]})
        await send({"type": "http.response.body", "body": body})

    # -- producers -----------------------------------------------------------------------
    def card(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.door.card_bytes())
        return doc

    def serve_card(self, card: dict[str, Any], envelope: dict[str, Any] | None) -> None:
        body = canonical_bytes(card)
        for path in (CARD_PATH, LEGACY_CARD_PATH):
            self.overrides[("GET", path)] = (200, JSON, body)
        self.overrides[("GET", CARD_SIG_PATH)] = (404, JSON, b"{}") if envelope is None \
            else (200, JSON, canonical_bytes(envelope))


@contextmanager
def fixture_site(name: str = "site") -> Iterator[FixtureSite]:
    keys = KeyStore(keys_dir())
    ident = keys.load(name) if keys.path_of(name).exists() else keys.create(name)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    base = parse_base_url(f"http://127.0.0.1:{port}")
    key = ident.signing_key()
    door = Door(key, DoorConfig(name=name, url=base, policy="open", rate_per_sender=0,
                                rate_total=0), IdentityStore(db_path(ident.did)))
    domain = f"127.0.0.1:{port}"
    now = int(time.time())
    link = did_configuration([sign_domain_linkage(key, domain, nbf=now - 60,
                                                  exp=now + 86400)])
    body, headers = sign_directory(key, domain, created=now - 60)
    site = FixtureSite(base.text, domain, door, key, build_app(door))
    site.extras = {
        ("GET", DID_CONFIGURATION_PATH): (200, JSON, json.dumps(link).encode()),
        ("GET", DIRECTORY_PATH): (200, {k.lower(): v for k, v in headers.items()}, body),
        ("GET", "/llms.txt"): (200, {"content-type": "text/plain"}, b"# Fixture site\n"),
        ("GET", "/robots.txt"): (200, {"content-type": "text/plain"},
                                 b"User-agent: *\nAllow: /\nUser-agent: GPTBot\nDisallow: /x\n"),
    }
    config = server_config(site, host="127.0.0.1", port=port,
                           slow_seconds=door.config.slow_seconds,
                           max_connections=door.config.max_connections)
    with run_uvicorn(config, sock):
        yield site
