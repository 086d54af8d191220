"""The door verifies a knock's Web Bot Auth signature and records the verdict with the message.

Real parts: doors and key-directory servers under uvicorn on 127.0.0.1. Loopback
directories are allowed only where a door is told so (``wba_allow_private``), as
``serve --wba-allow-private`` does; one test shows the default refuses them unfetched.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from muretai_cli import net
from muretai_cli.door import wba as door_wba
from muretai_cli.door.wba import CACHE_SECONDS, WbaCheck
from muretai_cli.home import KeyStore, keys_dir
from muretai_cli.seam import (
    DIRECTORY_MEDIA_TYPE,
    DIRECTORY_PATH,
    SigningKey,
    authority_of,
    sign_directory,
    sign_request,
)
from tests.cli_helpers import new_identity, run, run_json
from tests.door_helpers import Live, code_of, live_door, send_request
from tests.servers import serve_asgi
from tests.waiting import wait_until


def _key(name: str) -> SigningKey:
    new_identity(name)
    return KeyStore(keys_dir()).load(name).signing_key()


@contextmanager
def directory_server(key: SigningKey, *, body: bytes | None = None,
                     release: threading.Event | None = None) -> Iterator[tuple[str, list[str]]]:
    """Serves ``key``'s directory signed for the Host it is asked under (or ``body``);
    with ``release``, each answer waits for it. Yields (url, hosts of the GETs seen)."""
    seen: list[str] = []

    async def directory(request: Request) -> Response:
        seen.append(request.headers.get("host", ""))
        if release is not None:
            await asyncio.get_running_loop().run_in_executor(None, release.wait, 30)
        if body is not None:
            return Response(body, media_type=DIRECTORY_MEDIA_TYPE)
        data, headers = sign_directory(key, request.headers["host"], created=int(time.time()))
        return Response(data, headers=headers)

    with serve_asgi(Starlette(routes=[Route(DIRECTORY_PATH, directory)])) as url:
        yield url, seen


@contextmanager
def stalling_origin() -> Iterator[str]:
    """An origin that takes connections (the kernel's backlog) and never answers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def knock(door: Live, sender: SigningKey, agent: str, *, signed_for: str | None = None,
          created: int | None = None, text: str = "hello", body: dict[str, Any] | None = None
          ) -> dict[str, Any]:
    """A signed message/send POSTed with Web Bot Auth headers naming ``agent``."""
    headers = sign_request(sender, signed_for or door.base, signature_agent=agent,
                           created=int(time.time()) if created is None else created)
    request = body if body is not None else send_request(sender, door.did, text)
    resp = httpx.post(door.base, content=json.dumps(request).encode(), timeout=20,
                      headers={"content-type": "application/json", **headers})
    doc: dict[str, Any] = resp.json()
    return doc


def stored_wba(door: Live) -> list[dict[str, Any] | None]:
    store = door.store()
    try:
        return [m["wba"] for m in store.inbox()]
    finally:
        store.close()


def test_op_dm_wba_is_verified_by_our_door_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    with live_door(name="alice") as alice, live_door(name="bob", wba_allow_private=True) as bob:
        code, sent = run_json("op", "--as", "alice", "dm", bob.did, "hi bob", "--card-url",
                              bob.base, "--wba", "--wba-agent", alice.base)
        assert code == 0 and sent["state"] == "delivered", sent
        (wba,) = stored_wba(bob)
        assert wba == {"state": "verified", "agent": alice.base, "did": alice.did}
        code, shown = run_json("op", "--as", "bob", "inbox")
        assert shown["messages"][-1]["wba"]["did"] == alice.did
        assert f"wba verified as {alice.did}" in run("op", "--as", "bob", "inbox").stdout
        # Without --wba nothing is signed and nothing is recorded.
        assert run("op", "--as", "alice", "dm", bob.did, "again", "--card-url",
                   bob.base).exit_code == 0
        assert stored_wba(bob)[0] is None
        # MURETAI_WBA=1 and MURETAI_WBA_AGENT stand for the flags.
        monkeypatch.setenv("MURETAI_WBA", "1")
        monkeypatch.setenv("MURETAI_WBA_AGENT", alice.base)
        assert run("op", "--as", "alice", "dm", bob.did, "by env", "--card-url",
                   bob.base).exit_code == 0
        assert stored_wba(bob)[0] == wba


def test_a_refused_wba_is_recorded_and_refuses_no_message() -> None:
    key = _key("visitor")
    with directory_server(key) as (agent, _), live_door(wba_allow_private=True) as door:
        events: list[dict[str, Any]] = []
        door.door.on_event = events.append
        answer = knock(door, key, agent, signed_for="https://elsewhere.example/")
        assert "result" in answer, answer  # the message signature admitted it
        (wba,) = stored_wba(door)
        assert wba is not None and wba["state"] == "refused"
        assert wba["reason"]["code"] == "bad-signature"
        assert events[-1]["event"] == "accepted" and events[-1]["wba"] == wba


def test_a_verified_wba_never_stands_in_for_the_message_signature() -> None:
    key = _key("visitor")
    with directory_server(key) as (agent, seen), live_door(wba_allow_private=True) as door:
        events: list[dict[str, Any]] = []
        door.door.on_event = events.append
        request = send_request(key, door.did, "forged")
        request["params"]["message"]["parts"][0]["text"] = "changed after signing"
        answer = knock(door, key, agent, body=request)
        assert code_of(answer) is not None and "result" not in answer
        assert stored_wba(door) == []
        assert events[-1]["event"] == "refused"
        assert events[-1]["wba"]["state"] == "verified" and len(seen) == 1


def test_directories_are_cached_per_origin_and_fetched_again_after_expiry() -> None:
    key = _key("visitor")
    with directory_server(key) as (agent, seen), live_door(wba_allow_private=True) as door:
        for text in ("one", "two", "three"):
            assert "result" in knock(door, key, agent, text=text)
        assert len(seen) == 1
        assert [w and w["state"] for w in stored_wba(door)] == ["verified"] * 3

        offset = [0.0]
        check = WbaCheck(authority_of(door.base), allow_private=True,
                         clock=lambda: time.time() + offset[0])

        def verdict() -> str:
            headers = sign_request(key, door.base, signature_agent=agent,
                                   created=int(time.time() + offset[0]))
            lowered = {k.lower(): v for k, v in headers.items()}
            return asyncio.run(check.check(lowered)).state

        assert verdict() == "verified" and len(seen) == 2
        assert verdict() == "verified" and len(seen) == 2
        offset[0] = CACHE_SECONDS + 1
        assert verdict() == "verified" and len(seen) == 3
        check.close()


def test_the_cache_is_bounded() -> None:
    key = _key("visitor")
    with directory_server(key) as (a, seen_a), directory_server(key) as (b, seen_b), \
            live_door(wba_allow_private=True) as door:
        check = WbaCheck(authority_of(door.base), allow_private=True, cache_entries=1)

        def verdict(agent: str) -> str:
            headers = sign_request(key, door.base, signature_agent=agent,
                                   created=int(time.time()))
            return asyncio.run(check.check({k.lower(): v for k, v in headers.items()})).state

        assert [verdict(a), verdict(b), verdict(a)] == ["verified"] * 3
        assert (len(seen_a), len(seen_b)) == (2, 1)  # a was evicted by b
        check.close()


def test_knocks_naming_one_origin_share_one_fetch() -> None:
    key = _key("visitor")
    release = threading.Event()
    with directory_server(key, release=release) as (agent, seen), \
            live_door(wba_allow_private=True) as door:
        check = WbaCheck(authority_of(door.base), allow_private=True)
        headers = sign_request(key, door.base, signature_agent=agent, created=int(time.time()))
        lowered = {k.lower(): v for k, v in headers.items()}

        async def three() -> list[str]:
            tasks = [asyncio.ensure_future(check.check(lowered)) for _ in range(3)]
            while not seen:
                await asyncio.sleep(0.01)
            release.set()
            return [v.state for v in await asyncio.gather(*tasks)]

        assert asyncio.run(three()) == ["verified"] * 3 and len(seen) == 1
        check.close()


def test_a_stalling_directory_is_bounded_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # The origin never answers: the knock is answered at all only because the fetch is
    # abandoned, and the deadline it was given (observed, not timed) is the door's bound.
    monkeypatch.setattr(door_wba, "FETCH_SECONDS", 0.5)

    given: list[float] = []
    real_client = net.SafeClient

    def spied(*args: Any, **kwargs: Any) -> Any:
        given.append(kwargs["timeout"])
        return real_client(*args, **kwargs)

    monkeypatch.setattr(net, "SafeClient", spied)
    key = _key("visitor")
    with stalling_origin() as agent, live_door(wba_allow_private=True) as door:
        assert "result" in knock(door, key, agent)
        (wba,) = stored_wba(door)
        assert wba is not None and wba["reason"]["code"] in ("deadline", "wba-timeout")
    assert given == [0.5]


def test_a_directory_fetch_in_flight_never_blocks_the_door(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The directory is held until the test lets it go (no deadline can end it first), so
    # a card answered meanwhile was answered while the fetch was in flight, not after it.
    monkeypatch.setattr(door_wba, "FETCH_SECONDS", 60.0)
    key = _key("visitor")
    release = threading.Event()
    with directory_server(key, release=release) as (agent, seen), \
            live_door(wba_allow_private=True) as door:
        answers: list[dict[str, Any]] = []
        worker = threading.Thread(target=lambda: answers.append(knock(door, key, agent)))
        worker.start()
        try:
            wait_until(lambda: seen, "the door's fetch reached the directory")
            for _ in range(3):
                assert httpx.get(door.base + "/.well-known/agent-card.json",
                                 timeout=10).status_code == 200
            assert worker.is_alive() and not door.door.store.inbox()  # still waiting
        finally:
            release.set()
        worker.join(20)
        assert not worker.is_alive() and "result" in answers[0]
        (wba,) = stored_wba(door)
        assert wba is not None and wba["state"] == "verified"


def test_a_directory_larger_than_the_cap_is_abandoned() -> None:
    key = _key("visitor")
    with directory_server(key, body=b"{" + b" " * 1_000_000 + b"}") as (agent, seen), \
            live_door(wba_allow_private=True) as door:
        assert "result" in knock(door, key, agent)
        (wba,) = stored_wba(door)
        assert wba is not None and wba["reason"]["code"] == "too-large" and len(seen) == 1


def test_at_most_max_fetches_run_at_once() -> None:
    with stalling_origin() as one, stalling_origin() as two:
        key = SigningKey.generate()
        check = WbaCheck("door.example", allow_private=True, max_fetches=1, fetch_seconds=0.3)

        def headers(agent: str) -> dict[str, str]:
            signed = sign_request(key, "https://door.example/", signature_agent=agent,
                                  created=int(time.time()))
            return {k.lower(): v for k, v in signed.items()}

        async def both() -> list[str | None]:
            got = await asyncio.gather(check.check(headers(one)), check.check(headers(two)))
            return [v.reason.code if v.reason else None for v in got]

        codes = asyncio.run(both())
        check.close()
    assert "wba-busy" in codes and codes.count("wba-busy") == 1


def test_private_directories_are_refused_unfetched_by_default() -> None:
    key = _key("visitor")
    with directory_server(key) as (agent, seen), live_door() as door:
        assert "result" in knock(door, key, agent)
        (wba,) = stored_wba(door)
        assert wba is not None and wba["reason"]["code"] == "wba-private-address"
        assert seen == []


def test_a_signature_no_key_could_make_valid_costs_no_fetch() -> None:
    key = _key("visitor")
    with directory_server(key) as (agent, seen), live_door(wba_allow_private=True) as door:
        assert "result" in knock(door, key, agent, created=int(time.time()) - 3600)
        (wba,) = stored_wba(door)
        assert wba is not None and wba["reason"]["code"] == "wba-expired"
        assert seen == []


def test_a_held_first_contact_keeps_its_wba_verdict_when_approved() -> None:
    key = _key("visitor")
    with directory_server(key) as (agent, _), \
            live_door("quarantine", wba_allow_private=True) as door:
        answer = knock(door, key, agent)
        assert code_of(answer) == -32014
        store = door.store()
        try:
            (held,) = store.requests()
            assert held["wba"]["state"] == "verified"
            store.approve(held["id"], int(time.time()))
            assert store.inbox()[0]["wba"] == held["wba"]
        finally:
            store.close()


def test_the_verdict_is_kept_on_postgresql_too(pg_url: str) -> None:
    key = _key("visitor")
    with directory_server(key) as (agent, _), \
            live_door(db=pg_url, wba_allow_private=True) as door:
        assert "result" in knock(door, key, agent)
        assert "result" in knock(door, key, agent, signed_for="https://elsewhere.example/",
                                 text="two")
        assert sorted(w["state"] for w in stored_wba(door) if w) == ["refused", "verified"]
