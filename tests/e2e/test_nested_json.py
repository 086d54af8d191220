"""Deeply nested JSON from a hostile peer meets the one parse boundary: a named refusal in
``card fetch``, ``site check --json`` (its document still printed), ``verify
domain-linkage`` and the door's Web Bot Auth check, never a ``RecursionError``.

Each document nests far beyond the interpreter's recursion limit, so a ``json.loads``
anywhere on its way raises instead of refusing.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from muretai_cli.seam import (
    DIRECTORY_MEDIA_TYPE,
    DIRECTORY_PATH,
    SigningKey,
    did_configuration,
    sign_request,
)
from tests.cli_helpers import new_identity, run_json
from tests.door_helpers import live_door, send_request
from tests.hostile_site import HostileSite
from tests.servers import serve_asgi

DEEP = b"[" * (sys.getrecursionlimit() * 5) + b"]" * (sys.getrecursionlimit() * 5)


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def deep_credential(did: str) -> str:
    """A compact JWS naming ``did`` in its header whose payload nests too deeply."""
    header = _b64url(json.dumps({"alg": "EdDSA", "iss": did}).encode())
    return f"{header}.{_b64url(DEEP)}.{_b64url(bytes(64))}"


def test_card_fetch_and_site_check_refuse_a_deep_credential_by_name() -> None:
    hostile = HostileSite()
    did = hostile.did("good")
    # The payload is read to find the issuer: a malformed one names nobody, so is skipped.
    hostile.did_configuration = json.dumps(did_configuration([deep_credential(did)])).encode()
    hostile.wba_directory = DEEP
    with hostile.running() as base:
        code, card = run_json("card", "fetch", base + "/good")
        assert code == 0, card
        linkage = card["domainLinkage"]
        assert linkage["state"] == "not-bound" and linkage["reason"] == "not-linked"
        code, report = run_json("site", "check", base + "/good", "--allow-private")
    findings = {f["check"]: f for f in report["findings"]}
    assert findings["origin"]["facts"]["domainLinkage"] == "not-bound"
    assert findings["wba-directory"]["status"] == "FAIL"
    assert "wba-bad-directory" in findings["wba-directory"]["detail"]
    assert "too-deep" in findings["wba-directory"]["detail"]


def test_verify_domain_linkage_refuses_a_deep_credential_by_name(tmp_path: Path) -> None:
    did = new_identity("alice")
    path = tmp_path / "did-configuration.json"
    path.write_text(json.dumps(did_configuration([deep_credential(did)])))
    code, out = run_json("verify", "domain-linkage", str(path), "--domain", "127.0.0.1:8443",
                         "--did", did)
    assert code == 1 and out["results"][0]["reasons"][0]["code"] == "not-linked"
    # One credential given as a JSON string is verified itself: refused for what it is.
    path.write_text(json.dumps(deep_credential(did)))
    code, out = run_json("verify", "domain-linkage", str(path), "--domain", "127.0.0.1:8443",
                         "--did", did)
    assert code == 1
    (reason,) = out["results"][0]["reasons"]
    assert reason["code"] == "malformed-credential" and "too-deep" in reason["message"]


def test_a_knock_naming_a_deep_key_directory_is_recorded_refused_by_name() -> None:
    gets: list[str] = []

    async def directory(request: Request) -> Response:
        gets.append(request.url.path)
        return Response(DEEP, media_type=DIRECTORY_MEDIA_TYPE)

    key = SigningKey.generate()
    with serve_asgi(Starlette(routes=[Route(DIRECTORY_PATH, directory)])) as agent, \
            live_door(wba_allow_private=True) as door:
        headers = sign_request(key, door.base, signature_agent=agent, created=int(time.time()))
        answer = httpx.post(door.base, json=send_request(key, door.did, "hello"), timeout=20,
                            headers=headers).json()
        assert "result" in answer, answer  # the message signature admits it
        store = door.store()
        try:
            (wba,) = [m["wba"] for m in store.inbox()]
        finally:
            store.close()
    assert gets == [DIRECTORY_PATH] and wba["state"] == "refused"
    assert wba["reason"]["code"] == "wba-bad-directory", wba
    assert "too-deep" in wba["reason"]["message"]
