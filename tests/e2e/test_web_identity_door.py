"""The door publishes its Web Bot Auth key directory (signed) and, when given, a
did-configuration.json; card fetch and site check report the linkage; --wba signs requests."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from muretai_cli.door.app import build_app
from muretai_cli.door.core import Door, DoorConfig
from muretai_cli.home import KeyStore, keys_dir
from muretai_cli.inbox.store import IdentityStore, db_path
from muretai_cli.seam import (
    DID_CONFIGURATION_PATH,
    DIRECTORY_PATH,
    did_configuration,
    jwk_from_public,
    linked_did,
    sign_domain_linkage,
    verify_directory,
    verify_request,
)
from muretai_cli.transport.binding import bind
from muretai_cli.transport.server import server_config
from muretai_cli.urls import parse_base_url
from tests.cli_helpers import new_identity, run, run_json
from tests.servers import run_uvicorn, serve_asgi


@contextmanager
def door_with_linkage(name: str = "linked") -> Iterator[tuple[str, str, str]]:
    keys = KeyStore(keys_dir())
    ident = keys.create(name)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    base = parse_base_url(f"http://127.0.0.1:{port}")
    key = ident.signing_key()
    now = int(time.time())
    doc = did_configuration([sign_domain_linkage(key, f"127.0.0.1:{port}", nbf=now - 5,
                                                 exp=now + 3600)])
    door = Door(key, DoorConfig(name=name, url=base, policy="open",
                                did_configuration=json.dumps(doc).encode()),
                IdentityStore(db_path(ident.did)))
    config = server_config(build_app(door), host="127.0.0.1", port=port, slow_seconds=10,
                           max_connections=100)
    with run_uvicorn(config, sock):
        yield base.text, f"127.0.0.1:{port}", ident.did


def test_the_door_publishes_what_proves_its_identity() -> None:
    with door_with_linkage() as (base, domain, did):
        got = httpx.get(base + DIRECTORY_PATH, timeout=10)
        assert got.status_code == 200
        assert verify_directory(got.headers, got.content, authority=domain,
                                now=int(time.time())) == [did]
        link = httpx.get(base + DID_CONFIGURATION_PATH, timeout=10).json()
        assert linked_did(link, domain=domain, did=did, now=int(time.time())).did == did
        code, card = run_json("card", "fetch", base)
        assert code == 0 and card["domainLinkage"]["state"] == "bound"
        code, report = run_json("site", "check", base, "--allow-private")
        findings = {f["check"]: f for f in report["findings"]}
        assert code == 0 and findings["origin"]["facts"]["domainLinkage"] == "bound"
        assert findings["wba-directory"]["status"] == "PASS"
        assert findings["wba-directory"]["facts"]["namesCardDid"] is True


def test_serve_refuses_a_did_configuration_that_is_not_true(tmp_path: Path) -> None:
    new_identity("shop")
    made = run("domain", "link", "--as", "shop", "--domain", "shop.example")
    path = tmp_path / "dc.json"
    path.write_text(made.stdout)
    refused = run("serve", "--as", "shop", "--url", "http://127.0.0.1:9", "--port", "0",
                  "--did-configuration", str(path))
    assert refused.exit_code == 2 and "origin-mismatch" in refused.stderr


def test_wba_signs_every_request_of_a_site_check() -> None:
    seen: list[dict[str, str]] = []

    async def record(request: Request) -> JSONResponse:
        seen.append(dict(request.headers))
        return JSONResponse({"error": "not found"}, status_code=404)

    app = Starlette(routes=[Route("/{path:path}", record, methods=["GET", "POST", "OPTIONS"])])
    did = new_identity("visitor")
    key = KeyStore(keys_dir()).load("visitor").signing_key()
    with serve_asgi(app) as url:
        result = run("site", "check", url, "--allow-private", "--as", "visitor", "--wba",
                     "--wba-agent", "https://visitor.example")
        assert result.exit_code == 0, result.stderr
        assert run("site", "check", url, "--allow-private", "--wba").exit_code == 2
    authority = url.split("//", 1)[1]
    jwks: dict[str, Any] = {"keys": [jwk_from_public(key.public_bytes)]}
    assert seen and all(verify_request(h, authority=authority, jwks=jwks,
                                       now=int(time.time())) == did for h in seen)
    assert seen[0]["signature-agent"] == '"https://visitor.example"'


def test_wba_signs_the_requests_of_a_card_fetch() -> None:
    seen: list[dict[str, str]] = []

    async def record(request: Request) -> JSONResponse:
        seen.append(dict(request.headers))
        return JSONResponse({"error": "not found"}, status_code=404)

    app = Starlette(routes=[Route("/{path:path}", record, methods=["GET"])])
    did = new_identity("visitor")
    key = KeyStore(keys_dir()).load("visitor").signing_key()
    with serve_asgi(app) as url:
        run("card", "fetch", url, "--as", "visitor", "--wba", "--wba-agent",
            "https://visitor.example")
    authority = url.split("//", 1)[1]
    jwks: dict[str, Any] = {"keys": [jwk_from_public(key.public_bytes)]}
    assert seen and all(verify_request(h, authority=authority, jwks=jwks,
                                       now=int(time.time())) == did for h in seen)
