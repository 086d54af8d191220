"""The safe HTTP client: deadline, byte cap, redirects, loopback rule, error mapping."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import respx

from muretai_cli import __version__
from muretai_cli.errors import DeadlineExceeded, InputError, PeerRefused, Refused, Unreachable
from muretai_cli.net import Deadline, SafeClient, http_refusal, retry_after_seconds


def client(handler: object, **kw: object) -> SafeClient:
    return SafeClient(transport=httpx.MockTransport(handler), **kw)  # type: ignore[arg-type]


def test_user_agent_names_muretai_and_version() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["user-agent"])
        return httpx.Response(200, json={})

    with client(handler) as c:
        c.get("https://example.test/x")
    assert seen == [f"muretai/{__version__}"]


@pytest.mark.parametrize("url", ["http://example.test/x", "http://10.0.0.1/x",
                                 "http://localhost.evil.test/"])
def test_plain_http_refused_off_loopback_before_dialling(url: str) -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        return httpx.Response(200)

    with client(handler) as c, pytest.raises(InputError) as err:
        c.get(url)
    assert err.value.code == "insecure-url"
    assert calls == []


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/x", "http://localhost/x", "http://[::1]/x",
                                 "http://127.8.9.10/"])
def test_plain_http_allowed_on_loopback(url: str) -> None:
    with client(lambda r: httpx.Response(200, content=b"ok")) as c:
        assert c.get(url).body == b"ok"


def test_userinfo_refused() -> None:
    with client(lambda r: httpx.Response(200)) as c, pytest.raises(InputError):
        c.get("https://user:pw@example.test/")


def test_body_over_cap_is_abandoned_at_the_cap() -> None:
    produced: list[int] = []

    def endless() -> Iterator[bytes]:
        for i in range(10_000):
            produced.append(i)
            yield b"x" * 1024

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=endless())

    with client(handler, max_bytes=10 * 1024) as c, pytest.raises(Refused) as err:
        c.get("https://example.test/big")
    assert err.value.code == "too-large"
    assert len(produced) <= 12  # stopped at the cap, the rest never read


def test_body_at_the_cap_is_read() -> None:
    with client(lambda r: httpx.Response(200, content=b"x" * 100), max_bytes=100) as c:
        assert len(c.get("https://example.test/").body) == 100


def test_declared_length_over_cap_is_refused_without_reading() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-length": "999999"}, content=b"{}")

    with client(handler, max_bytes=1000) as c, pytest.raises(Refused) as err:
        c.get("https://example.test/")
    assert err.value.code == "too-large"


def test_compressed_body_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept-encoding"] == "identity"
        return httpx.Response(200, headers={"content-encoding": "gzip"}, content=b"\x1f\x8b")

    with client(handler) as c, pytest.raises(Refused) as err:
        c.get("https://example.test/")
    assert err.value.code == "unsupported-encoding"


def test_cross_origin_redirect_discarded_and_reported() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        if request.url.host == "example.test":
            return httpx.Response(302, headers={"location": "https://evil.test/card"})
        return httpx.Response(200, json={"evil": True})

    with client(handler) as c, pytest.raises(Refused) as err:
        c.get("https://example.test/card")
    assert err.value.code == "cross-origin-redirect"
    assert err.value.data["to"] == "https://evil.test/card"
    assert calls == ["https://example.test/card"]  # never dialled the other origin


@pytest.mark.parametrize("location", ["http://example.test/card",  # scheme change
                                      "https://example.test:8443/card",  # port change
                                      "https://sub.example.test/card"])
def test_origin_includes_scheme_port_and_host(location: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(301, headers={"location": location})

    with client(handler) as c, pytest.raises(Refused) as err:
        c.get("https://example.test/old")
    assert err.value.code == "cross-origin-redirect"


def test_same_origin_redirect_followed_a_bounded_number_of_times() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/old":
            return httpx.Response(301, headers={"location": "/new"})
        return httpx.Response(200, content=b"new")

    with client(handler) as c:
        result = c.get("https://example.test/old")
    assert result.body == b"new" and result.redirects == ("https://example.test/new",)

    loop = client(lambda r: httpx.Response(302, headers={"location": "/loop"}), max_redirects=3)
    with loop, pytest.raises(Refused) as err:
        loop.get("https://example.test/loop")
    assert err.value.code == "too-many-redirects"


def test_post_is_never_redirected_nor_retried() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.method + " " + request.url.path)
        return httpx.Response(307, headers={"location": "/elsewhere"})

    with client(handler) as c:
        result = c.post_json("https://example.test/door", b"{}")
    assert result.status == 307 and calls == ["POST /door"]
    refusal = http_refusal(result)
    assert refusal is not None and refusal.exit_code == 4


@pytest.mark.parametrize(("status", "code"), [(429, "rate-limited"), (503, "unavailable"),
                                              (500, "http-error"), (404, "http-error")])
def test_http_refusals_carry_retry_after(status: int, code: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"retry-after": "12"})

    with client(handler) as c:
        refusal = http_refusal(c.get("https://example.test/"))
    assert isinstance(refusal, PeerRefused) and refusal.code == code
    assert refusal.data["retryAfter"] == 12 and refusal.data["status"] == status


def test_retry_after_forms() -> None:
    assert retry_after_seconds("7") == 7
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470) == 10
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


def test_connect_error_is_unreachable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with client(handler) as c, pytest.raises(Unreachable) as err:
        c.get("https://example.test/")
    assert err.value.exit_code == 3


def test_timeout_is_deadline_exceeded() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    with client(handler) as c, pytest.raises(DeadlineExceeded) as err:
        c.get("https://example.test/")
    assert err.value.exit_code == 5


def test_requests_after_the_deadline_are_skipped_and_recorded() -> None:
    now = [0.0]
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        return httpx.Response(200)

    deadline = Deadline(3.0, clock=lambda: now[0])
    with SafeClient(transport=httpx.MockTransport(handler), deadline=deadline) as c:
        c.get("https://example.test/1")
        now[0] = 2.0
        c.get("https://example.test/2")
        now[0] = 3.5
        with pytest.raises(DeadlineExceeded) as err:
            c.get("https://example.test/3")
    assert calls == ["https://example.test/1", "https://example.test/2"]
    assert err.value.data["skipped"] == [{"method": "GET", "url": "https://example.test/3",
                                          "reason": "deadline"}]


def test_slow_trickle_stops_at_the_deadline() -> None:
    """A body arriving a byte per 100 ms (on a clock the test drives: no sleeping, no
    wall-clock bound) is abandoned as the deadline passes, while it is being read."""
    now = [0.0]
    sent = [0]

    def trickle() -> Iterator[bytes]:
        while sent[0] < 10_000:  # endless, as far as a 0.45 s deadline can tell
            now[0] += 0.1
            sent[0] += 1
            yield b"x"

    deadline = Deadline(0.45, clock=lambda: now[0])
    with client(lambda r: httpx.Response(200, content=trickle()), deadline=deadline) as c, \
            pytest.raises(DeadlineExceeded) as err:
        c.get("https://example.test/")
    assert "reading" in err.value.detail and sent[0] == 5, (err.value.detail, sent[0])


@respx.mock
def test_respx_default_transport_shapes() -> None:
    route = respx.get("https://example.test/.well-known/agent-card.json").mock(
        return_value=httpx.Response(429, headers={"Retry-After": "30"}))
    with SafeClient() as c:
        result = c.get("https://example.test/.well-known/agent-card.json")
    assert route.call_count == 1 and result.retry_after == 30


def test_public_surface() -> None:
    import muretai_cli.net as net

    assert sorted(net.__all__) == sorted(["ClientFor", "DEFAULT_MAX_BYTES", "DEFAULT_TIMEOUT",
                                          "MAX_REDIRECTS", "Deadline", "HttpResult", "SafeClient",
                                          "check_request_url", "http_refusal",
                                          "private_addresses", "retry_after_seconds",
                                          "user_agent"])
    for name in net.__all__:
        assert getattr(net, name) is not None
