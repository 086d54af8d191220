"""The blind relay over real HTTP: every route, every refusal, tokens, epochs and limits."""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from muretai_cli.seam import SigningKey, open_box, sign_card_envelope, sign_listen_token
from tests.clock import Clock
from tests.relay_helpers import LiveRelay, deposit_body, listen_body, live_relay
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRelay]:
    with live_relay(tmp_path_factory.mktemp("relay") / "relay.sqlite3", path="/r") as relay:
        yield relay


def _keys(n: int = 2) -> list[SigningKey]:
    return [SigningKey.generate() for _ in range(n)]


def _error(resp: httpx.Response) -> str:
    doc = resp.json()
    assert set(doc) == {"error", "message"}, doc
    return str(doc["error"])


def test_deposit_listen_open_ack(live: LiveRelay) -> None:
    alice, bob = _keys()
    body = deposit_body(alice, bob, "hello bob")
    resp = live.post("send", body)
    assert resp.status_code == 200 and resp.json() == {"queued": True, "id": body["id"]}
    resp = live.listen(bob)
    assert resp.status_code == 200
    doc = resp.json()
    assert doc["more"] is False and len(doc["messages"]) == 1
    msg = doc["messages"][0]
    assert set(msg) == {"id", "from", "from_enc", "blob", "received"}
    assert (msg["id"], msg["from"], msg["from_enc"], msg["blob"]) == (
        body["id"], alice.did, alice.enc_pub, body["blob"])
    assert abs(msg["received"] - time.time()) < 5
    assert open_box(bob, msg["from_enc"], msg["blob"], ad=b"") == b"hello bob"
    assert live.ack(bob, [body["id"]]).json() == {"acked": 1}
    assert live.ack(bob, [body["id"]]).json() == {"acked": 0}  # idempotent
    assert live.listen(bob).json() == {"messages": [], "more": False}


def test_a_retry_is_stored_once_and_other_content_under_the_id_is_refused(
        live: LiveRelay) -> None:
    alice, bob, carol = _keys(3)
    body = deposit_body(alice, bob, deposit_id="same")
    assert live.post("send", body).json() == {"queued": True, "id": "same"}
    assert live.post("send", body).json() == {"queued": True, "duplicate": True, "id": "same"}
    resp = live.post("send", deposit_body(alice, bob, "other", deposit_id="same"))
    assert resp.status_code == 409 and _error(resp) == "id-reused"
    resp = live.post("send", deposit_body(carol, bob, deposit_id="same"))
    assert resp.status_code == 409 and _error(resp) == "id-reused"
    assert len(live.listen(bob).json()["messages"]) == 1


def test_a_deposit_whose_signature_fails_is_refused(live: LiveRelay) -> None:
    alice, bob, carol = _keys(3)
    body = deposit_body(alice, bob)
    forged = body | {"sig": deposit_body(carol, bob, deposit_id=body["id"],
                                         blob=body["blob"])["sig"]}
    for bad in (forged, body | {"id": "another"}, body | {"to": carol.did}):
        resp = live.post("send", bad)
        assert resp.status_code == 401 and _error(resp) == "bad-signature"
    assert live.listen(bob).json()["messages"] == []


def _mutations() -> list[tuple[str, Any]]:
    alice, bob = SigningKey(bytes([1]) * 32), SigningKey(bytes([2]) * 32)
    good = deposit_body(alice, bob)
    short = base64.b64encode(bytes(27)).decode()
    return [
        ("not json", b"{"), ("an array", b"[]"), ("bom", b"\xef\xbb\xbf{}"),
        ("no to", {k: v for k, v in good.items() if k != "to"}),
        ("to not a did", good | {"to": "did:key:zzz"}),
        ("from a number", good | {"from": 5}),
        ("from_enc upper", good | {"from_enc": good["from_enc"].upper()}),
        ("from_enc short", good | {"from_enc": "ab"}),
        ("id empty", good | {"id": ""}), ("id with a bar", good | {"id": "a|b"}),
        ("id too long", good | {"id": "x" * 129}), ("id control", good | {"id": "a\nb"}),
        ("blob not base64", good | {"blob": "!!!!"}),
        ("blob too short for a box", good | {"blob": short}),
        ("blob a list", good | {"blob": ["x"]}),
    ]


@pytest.mark.parametrize(("why", "body"), _mutations(), ids=[m[0] for m in _mutations()])
def test_malformed_deposits_are_400(live: LiveRelay, why: str, body: Any) -> None:
    resp = live.post("send", body)
    assert resp.status_code == 400, why
    assert _error(resp) == "malformed"


def test_sizes_are_413(tmp_path: Path) -> None:
    alice, bob = _keys()
    with live_relay(tmp_path / "r.sqlite3", max_body=4096, max_blob=1024) as relay:
        big_blob = base64.b64encode(bytes(800)).decode()
        resp = relay.post("send", deposit_body(alice, bob, blob=big_blob))
        assert resp.status_code == 413 and _error(resp) == "too-large"
        body = json.dumps(deposit_body(alice, bob) | {"pad": "x" * 5000}).encode()
        resp = relay.post("send", body)
        assert resp.status_code == 413 and _error(resp) == "too-large"
        assert relay.deposit(alice, bob).status_code == 200  # the same relay, a fitting one


@pytest.mark.parametrize("route", ["listen", "ack"])
def test_every_wrong_part_of_a_token_is_one_401(live: LiveRelay, route: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(1_800_000_059)  # a minute's last second, which the relay's clock never leaves
    monkeypatch.setattr(live.relay, "clock", clock)
    bob, eve = _keys()
    now = int(clock() // 60)
    extra: dict[str, Any] = {"ids": []} if route == "ack" else {"wait": 0}

    def body(*, did: str = bob.did, minute: int = now, signer: SigningKey = bob,
             origin: str = live.origin, signed_minute: int | None = None) -> dict[str, Any]:
        token = sign_listen_token(signer, minute=signed_minute if signed_minute is not None
                                  else minute, origin=origin)
        return {"did": did, "minute": minute, "token": token, "epoch": 1} | extra

    bad = [body(minute=now - 2), body(minute=now + 2), body(origin="http://127.0.0.1:1"),
           body(signer=eve), body(signed_minute=now - 1),
           body() | {"token": "A" * 88}, body() | {"token": ""}]
    answers = [live.post(route, b) for b in bad]
    assert [a.status_code for a in answers] == [401] * len(bad)
    assert len({a.content for a in answers}) == 1  # no hint which part failed
    for good in (body(minute=now - 1), body(minute=now + 1), body()):
        assert live.post(route, good).status_code == 200


def test_two_spellings_of_one_relay_url_give_one_token(tmp_path: Path) -> None:
    alice, bob = _keys()
    with live_relay(tmp_path / "r.sqlite3", url="HTTP://127.0.0.1:{port}/Box/") as relay:
        # the relay was started as HTTP://127.0.0.1:PORT/Box/; the client says it plainly
        client = LiveRelay(relay.url + "/Box", relay.relay)
        assert client.deposit(alice, bob).status_code == 200
        assert len(client.listen(bob).json()["messages"]) == 1


def test_an_older_epoch_is_superseded(live: LiveRelay) -> None:
    (bob,) = _keys(1)
    assert live.listen(bob, epoch=10).status_code == 200
    assert live.listen(bob, epoch=10).status_code == 200
    for resp in (live.listen(bob, epoch=9), live.ack(bob, [], epoch=9)):
        assert resp.status_code == 409 and _error(resp) == "superseded"
    assert live.listen(bob, epoch=11).status_code == 200
    assert live.listen(bob, epoch=10).status_code == 409


def test_a_held_poll_answers_409_when_a_newer_listener_arrives(live: LiveRelay) -> None:
    (bob,) = _keys(1)
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        held = pool.submit(live.listen, bob, epoch=1, wait=20)
        wait_until(lambda: live.relay.notifier.listeners() > 0, "a poll is held", timeout=5)  # type: ignore[attr-defined]
        assert live.listen(bob, epoch=2).status_code == 200
        resp = held.result(timeout=10)
    assert resp.status_code == 409 and _error(resp) == "superseded"
    assert time.monotonic() - started < 5


def test_a_held_poll_answers_when_a_deposit_arrives(live: LiveRelay) -> None:
    alice, bob = _keys()
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(live.listen, bob, wait=20)
        wait_until(lambda: live.relay.notifier.listeners() > 0, "a poll is held", timeout=5)  # type: ignore[attr-defined]
        started = time.monotonic()
        assert live.deposit(alice, bob, "now").status_code == 200
        resp = held.result(timeout=10)
    assert time.monotonic() - started < 2
    assert [open_box(bob, m["from_enc"], m["blob"], ad=b"") for m in resp.json()["messages"]] \
        == [b"now"]


def test_a_poll_with_nothing_waiting_ends_empty_when_its_wait_ends(live: LiveRelay) -> None:
    (bob,) = _keys(1)
    started = time.monotonic()
    assert live.listen(bob, wait=0.3).json() == {"messages": [], "more": False}
    assert 0.25 < time.monotonic() - started < 3


@pytest.mark.parametrize("wait", [-1, 31, "5", True, None])
def test_wait_is_zero_to_thirty_seconds(live: LiveRelay, wait: object) -> None:
    (bob,) = _keys(1)
    resp = live.post("listen", listen_body(bob, live.origin) | {"wait": wait})
    assert resp.status_code == 400 and _error(resp) == "malformed"


def test_batches_are_oldest_first_with_more(tmp_path: Path) -> None:
    alice, bob = _keys()
    with live_relay(tmp_path / "r.sqlite3", batch=2) as relay:
        texts = [f"m{i}".encode() for i in range(3)]
        for text in texts:
            assert relay.deposit(alice, bob, text.decode()).status_code == 200
        first = relay.listen(bob).json()
        assert first["more"] is True
        assert [open_box(bob, m["from_enc"], m["blob"], ad=b"") for m in first["messages"]] \
            == texts[:2]
        relay.ack(bob, [m["id"] for m in first["messages"]])
        rest = relay.listen(bob).json()
        assert rest["more"] is False and len(rest["messages"]) == 1


def test_rates_per_sender_and_per_mailbox_are_429_with_retry_after(tmp_path: Path) -> None:
    alice, bob, carol, dave = _keys(4)
    with live_relay(tmp_path / "r.sqlite3", per_sender=2, per_mailbox=3) as relay:
        assert [relay.deposit(alice, bob).status_code for _ in range(2)] == [200, 200]
        resp = relay.deposit(alice, carol)  # alice is out of tokens, whoever she writes to
        assert resp.status_code == 429 and _error(resp) == "rate-limited"
        assert int(resp.headers["retry-after"]) >= 1
        assert relay.deposit(carol, bob).status_code == 200  # bob's third
        resp = relay.deposit(dave, bob)  # bob's mailbox is out of tokens
        assert resp.status_code == 429 and int(resp.headers["retry-after"]) >= 1
        assert relay.deposit(dave, carol).status_code == 200  # a refusal cost dave nothing


def test_a_full_mailbox_is_507(tmp_path: Path) -> None:
    alice, bob = _keys()
    with live_relay(tmp_path / "r.sqlite3", max_waiting=2) as relay:
        bodies = [deposit_body(alice, bob) for _ in range(3)]
        assert [relay.post("send", b).status_code for b in bodies[:2]] == [200, 200]
        resp = relay.post("send", bodies[2])
        assert resp.status_code == 507 and _error(resp) == "mailbox-full"
        assert relay.post("send", bodies[0]).json()["duplicate"] is True  # a retry still is
        relay.ack(bob, [bodies[0]["id"]])
        assert relay.post("send", bodies[2]).status_code == 200


@pytest.mark.parametrize(("method", "route", "status"), [
    ("GET", "/r/send", 405), ("PUT", "/r/listen", 405), ("DELETE", "/r/ack", 405),
    ("GET", "/r/card", 405), ("POST", "/r/card/did:key:z6Mk", 405),
    ("POST", "/r/nope", 404), ("POST", "/send", 404), ("POST", "/r/send/", 404),
    ("POST", "/r/send?x=1", 404), ("GET", "/r/card/a/b", 404), ("GET", "/", 404),
])
def test_unknown_routes_and_wrong_methods(live: LiveRelay, method: str, route: str,
                                          status: int) -> None:
    origin = live.url.rsplit("/r", 1)[0]
    resp = httpx.request(method, origin + route, content=b"{}", timeout=10)
    assert resp.status_code == status
    assert _error(resp) == ("not-found" if status == 404 else "method-not-allowed")
    if status == 405:
        assert "allow" in resp.headers


def test_options_answers_cors(live: LiveRelay) -> None:
    resp = httpx.options(live.url + "/send", timeout=10)
    assert resp.status_code == 204 and resp.headers["allow"] == "POST, OPTIONS"


def test_cards_newest_wins_and_verify_under_their_did(live: LiveRelay) -> None:
    alice, eve = _keys()
    now = int(time.time())
    card = {"did": alice.did, "name": "alice", "url": "", "relay": live.url,
            "enc_pub": alice.enc_pub}
    first = sign_card_envelope(alice, card, now - 10)
    resp = live.post("card", first)
    assert resp.status_code == 200 and resp.json()["stored"] is True
    got = httpx.get(f"{live.url}/card/{alice.did}", timeout=10)
    assert got.status_code == 200 and got.json() == first
    for stale in (first, sign_card_envelope(alice, card, now - 20)):
        resp = live.post("card", stale)
        assert resp.status_code == 409 and _error(resp) == "stale-card"
    newer = sign_card_envelope(alice, card | {"name": "alice2"}, now)
    assert live.post("card", newer).status_code == 200
    assert httpx.get(f"{live.url}/card/{alice.did}", timeout=10).json() == newer
    forged = newer | {"ts": now + 1}
    wrong_signer = sign_card_envelope(eve, {"name": "x"}, now + 5) | {"card": card}
    future = sign_card_envelope(alice, card, now + 3600)
    for bad in (forged, wrong_signer, future, {"card": "x"}):
        resp = live.post("card", bad)
        assert resp.status_code in (400,) and _error(resp) in ("bad-card", "malformed"), bad
    assert httpx.get(f"{live.url}/card/{alice.did}", timeout=10).json() == newer


def test_an_unknown_or_malformed_card_did_is_404(live: LiveRelay) -> None:
    (nobody,) = _keys(1)
    for did in (nobody.did, "did:key:zzz", "x"):
        resp = httpx.get(f"{live.url}/card/{did}", timeout=10)
        assert resp.status_code == 404 and _error(resp) == "not-found"



# -- the shared transport (muretai_cli.transport), as the door has it -----------------------

def _exchange(port: int, data: bytes, *, timeout: float = 5) -> bytes:
    """Send ``data`` on a fresh connection and read until the relay closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    return answer


def test_a_body_that_does_not_arrive_in_time_is_408(tmp_path: Path) -> None:
    with live_relay(tmp_path / "r.sqlite3", slow_seconds=0.5) as relay:
        started = time.monotonic()
        answer = _exchange(relay.port, b"POST /send HTTP/1.1\r\nHost: x\r\n"
                                       b"Content-Length: 100\r\n\r\n{")
        assert answer.startswith(b"HTTP/1.1 408"), answer[:60]
        body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert body["error"] == "timeout" and set(body) == {"error", "message"}
        assert time.monotonic() - started < 4


def test_a_client_slow_to_send_its_headers_is_cut(tmp_path: Path) -> None:
    with live_relay(tmp_path / "r.sqlite3", slow_seconds=0.5) as relay:
        started = time.monotonic()
        answer = _exchange(relay.port, b"POST /send HTTP/1.1\r\nHost: x\r\n")
        assert answer.startswith(b"HTTP/1.1 408"), answer[:60]
        assert time.monotonic() - started < 4
        body = json.loads(answer.split(b"\r\n\r\n", 1)[1])  # the relay's refusal shape
        assert set(body) == {"error", "message"} and body["error"] == "timeout"
        alice, bob = _keys()
        assert relay.deposit(alice, bob).status_code == 200  # the others are still served


def _held_poll(relay: LiveRelay, key: SigningKey) -> socket.socket:
    """A raw connection holding a listen for ``key`` (20 s), once the relay holds it."""
    body = json.dumps(listen_body(key, relay.origin, wait=20)).encode()
    sock = socket.create_connection(("127.0.0.1", relay.port), timeout=5)
    path = relay.url.split(str(relay.port), 1)[1]
    sock.sendall(f"POST {path}/listen HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}"
                 f"\r\n\r\n".encode() + body)
    wait_until(lambda: relay.relay.notifier.listeners() > 0, "a poll is held", timeout=5)  # type: ignore[attr-defined]
    return sock


def test_a_held_poll_whose_client_left_stops_holding(live: LiveRelay) -> None:
    (bob,) = _keys(1)
    _held_poll(live, bob).close()
    wait_until(lambda: live.relay.notifier.listeners() == 0, "no poll is held", timeout=5)  # type: ignore[attr-defined]


def test_held_polls_count_against_the_per_client_bound(tmp_path: Path) -> None:
    alice, bob, carol = _keys(3)
    with live_relay(tmp_path / "r.sqlite3", max_per_client=1) as relay:
        held = _held_poll(relay, bob)
        # a held poll is a request in flight: never evicted as idle, so the newcomer is refused
        resp = relay.deposit(alice, carol)
        assert resp.status_code == 503 and _error(resp) == "busy", resp.text
        held.close()
        wait_until(lambda: relay.relay.notifier.listeners() == 0, "no poll is held", timeout=5)  # type: ignore[attr-defined]
        wait_until(lambda: relay.deposit(alice, carol).status_code == 200, "a deposit for carol is taken", timeout=5)


def test_a_held_poll_gives_its_place_in_the_total_bound(tmp_path: Path) -> None:
    """Past --max-connections with no idle connection, the poll held longest is answered
    at once (nothing waits) and closed, and the newcomer is served (issue 22 §3)."""
    alice, bob, carol = _keys(3)
    with live_relay(tmp_path / "r.sqlite3", max_connections=1) as relay:
        held = _held_poll(relay, bob)
        resp = relay.deposit(alice, carol)
        assert resp.status_code == 200, resp.text
        answer = b""
        while chunk := held.recv(65536):
            answer += chunk
        held.close()
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(
            b'{"messages":[],"more":false}')


def test_an_idle_connection_gives_its_place_to_a_request(tmp_path: Path) -> None:
    alice, bob = _keys()
    with live_relay(tmp_path / "r.sqlite3", max_connections=1) as relay, \
            socket.create_connection(("127.0.0.1", relay.port), timeout=5) as idle:
        # full with a socket that sends nothing: a deposit still gets in (evicting it)
        wait_until(lambda: relay.deposit(alice, bob).status_code == 200, "a deposit for bob is taken", timeout=5)
        assert idle.recv(4096) == b""  # closed by the relay, without an answer


@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_what_no_http_parser_reads_is_refused_in_json_too(tmp_path: Path, http: str) -> None:
    from tests.door_helpers import raw_exchange, refusal_of

    with live_relay(tmp_path / "relay.sqlite3", path="/r", http=http) as relay:
        origin = relay.url.rsplit("/", 1)[0]
        for raw in (b"GARBAGE\r\n\r\n", b"POST /r/send HTTP/1.1\r\nHost x\r\n\r\n",
                    b"POST /r/send HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"):
            assert refusal_of(raw_exchange(origin, raw)) == (400, "malformed"), raw
        head = b"POST /r/send HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 20000 + b"\r\n\r\n"
        assert refusal_of(raw_exchange(origin, head)) == (400, "too-large")
        assert relay.listen(SigningKey.generate()).status_code == 200  # and it goes on
