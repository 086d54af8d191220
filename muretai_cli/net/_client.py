"""The client itself (imports httpx; loaded only through ``muretai_cli.net``)."""

from __future__ import annotations

import email.utils
import functools
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from muretai_cli import __version__
from muretai_cli.errors import (
    DeadlineExceeded,
    InputError,
    MuretaiError,
    PeerRefused,
    Refused,
    Unreachable,
)
from muretai_cli.net._deadline import Deadline
from muretai_cli.urls import URL_FORBIDDEN, is_loopback_host, origin_of

_REDIRECTS = {301, 302, 303, 307, 308}
MAX_RETRY_AFTER = 7 * 86400


def user_agent() -> str:
    return f"muretai/{__version__}"


def check_request_url(url: str) -> str:
    """The URL itself if muretai may dial it: http(s), a host, no userinfo, http on loopback."""
    if not isinstance(url, str) or len(url) > 4096 or URL_FORBIDDEN.search(url) is not None:
        raise InputError("bad-url", f"{str(url)[:200]!r} is not a URL muretai can dial")
    origin = origin_of(url)
    if origin is None:
        raise InputError("bad-url", f"{url[:200]!r} is not an http(s) URL with a host "
                                    "(and no user@)")
    parts = urlsplit(url)
    if parts.scheme.lower() == "http" and not is_loopback_host(parts.hostname or ""):
        raise InputError("insecure-url", f"{url[:200]!r}: plain http is accepted only for "
                                         "loopback hosts", hint="use https://")
    return url


def retry_after_seconds(value: str | None, *, now: float | None = None) -> int | None:
    """``Retry-After`` as whole seconds (delta-seconds or an HTTP date), else None."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return min(int(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    now = time.time() if now is None else now
    return max(0, min(int(when.timestamp() - now + 0.999), MAX_RETRY_AFTER))


@dataclass(frozen=True, slots=True)
class HttpResult:
    """One answered request. ``body`` holds at most the cap; ``url`` is where it ended."""

    method: str
    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    redirects: tuple[str, ...] = field(default=())

    @property
    def retry_after(self) -> int | None:
        return retry_after_seconds(self.headers.get("retry-after"))


def http_refusal(result: HttpResult) -> PeerRefused | None:
    """The refusal an HTTP status carries (429, 503, any other 3xx-5xx), or None for 2xx."""
    if 200 <= result.status < 300:
        return None
    retry = result.retry_after
    data: dict[str, Any] = {"status": result.status, "url": result.url}
    hint = None
    if retry is not None:
        data["retryAfter"] = retry
        hint = f"the peer asks to wait {retry} s; nothing was retried"
    if result.status == 429:
        return PeerRefused("rate-limited", f"{result.url} answered HTTP 429 (too many "
                                           "requests)", hint=hint, data=data)
    if result.status == 503:
        return PeerRefused("unavailable", f"{result.url} answered HTTP 503 (unavailable)",
                           hint=hint, data=data)
    return PeerRefused("http-error", f"{result.url} answered HTTP {result.status}", hint=hint,
                       data=data)


@functools.lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every client: loading the CA bundle costs milliseconds,
    and a command that makes one client per request (a relay drain) paid it each time."""
    return httpx.create_ssl_context(trust_env=False)


class SafeClient:
    """GET and JSON-RPC POST under one deadline, one byte cap, and the redirect rules.

    ``attempts`` records every request started (with its status or error code) and
    ``skipped`` every request not started because the deadline had run out.
    """

    def __init__(self, *, timeout: float = 30.0, max_bytes: int = 1024 * 1024,
                 transport: httpx.BaseTransport | None = None, max_redirects: int = 3,
                 deadline: Deadline | None = None,
                 signer: Callable[[str], Mapping[str, str]] | None = None,
                 deadline_hint: str = "try again later") -> None:
        if max_bytes < 1:
            raise InputError("bad-max-bytes", "the byte cap must be at least 1")
        self.deadline = deadline or Deadline(timeout)
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.attempts: list[dict[str, Any]] = []
        self.skipped: list[dict[str, str]] = []
        # Headers added to every request for its URL (Web Bot Auth signs each one).
        self.signer = signer
        # What to do when the deadline runs out: the caller knows (a CLI names its option).
        self.deadline_hint = deadline_hint
        self._client = httpx.Client(
            transport=transport, follow_redirects=False, trust_env=False, verify=_tls_context(),
            headers={"User-Agent": user_agent(), "Accept-Encoding": "identity"})

    def __enter__(self) -> SafeClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def rearm(self, seconds: float, max_bytes: int) -> None:
        """A fresh deadline and byte cap for the requests that follow, on the same
        connections (a relay drain's back-to-back listen and ack reuse one); what was
        attempted before is forgotten, so a long-lived client does not grow."""
        if max_bytes < 1:
            raise InputError("bad-max-bytes", "the byte cap must be at least 1")
        self.deadline = Deadline(seconds)
        self.max_bytes = max_bytes
        self.attempts = []
        self.skipped = []

    def report(self) -> dict[str, Any]:
        """What was attempted and what was skipped, for an error's ``data``."""
        return {"attempts": [dict(a) for a in self.attempts],
                "skipped": [dict(s) for s in self.skipped]}

    def skip(self, method: str, url: str, why: str = "deadline") -> None:
        """Record a request the caller will not start (the deadline ran out before it)."""
        self.skipped.append({"method": method, "url": url, "reason": why})

    def deadline_error(self, where: str) -> DeadlineExceeded:
        detail = f"the {self.deadline.seconds:g} s deadline ran out {where}"
        if self.skipped:
            detail += "; not reached: " + ", ".join(s["url"] for s in self.skipped)
        return DeadlineExceeded("deadline", detail, hint=self.deadline_hint,
                                data=self.report())

    def get(self, url: str, *, accept: str = "application/json") -> HttpResult:
        """GET ``url``, following same-origin redirects at most ``max_redirects`` times."""
        current = check_request_url(url)
        hops: list[str] = []
        while True:
            result = self._send("GET", current, headers={"Accept": accept})
            location = result.headers.get("location")
            if result.status not in _REDIRECTS or not location:
                return HttpResult(result.method, result.url, result.status, result.headers,
                                  result.body, tuple(hops))
            target = urljoin(current, location)
            if origin_of(target) != origin_of(current):
                raise Refused("cross-origin-redirect",
                              f"{current} redirected to another origin ({target[:200]}); the "
                              "response was discarded",
                              data={"from": current, "to": target[:2048], **self.report()})
            if len(hops) >= self.max_redirects:
                raise Refused("too-many-redirects",
                              f"{url} redirected more than {self.max_redirects} times",
                              data={"redirects": [*hops, target], **self.report()})
            hops.append(target)
            current = check_request_url(target)

    def options(self, url: str) -> HttpResult:
        """OPTIONS ``url`` once (a CORS preflight as a browser would send it); not redirected."""
        check_request_url(url)
        return self._send("OPTIONS", url, headers={
            "Origin": "https://example.org", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})

    def post_json(self, url: str, body: bytes, *, within: float | None = None) -> HttpResult:
        """POST a JSON body once. Never retried, never redirected: the answer is returned.

        ``within`` bounds this request below what is left of the shared deadline (a caller
        that may retry keeps time for it)."""
        check_request_url(url)
        return self._send("POST", url, content=body, within=within,
                          headers={"Content-Type": "application/json",
                                   "Accept": "application/json"})

    def _send(self, method: str, url: str, *, headers: dict[str, str],
              content: bytes | None = None, within: float | None = None) -> HttpResult:
        """One request, bounded by the wall clock as well as by httpx's per-phase timeouts.

        httpx applies its timeout to each phase (connect, then each read), so a slow connect
        followed by a slow first byte could take twice what is left. The exchange therefore
        runs in a worker thread that the caller waits for only until the deadline; a worker
        still waiting then is abandoned (it ends when its own timeouts fire).
        """
        remaining = self.deadline.remaining()
        if remaining <= 0:
            self.skip(method, url)
            raise self.deadline_error(f"before {method} {url}")
        if within is not None:
            remaining = min(remaining, within)
        record: dict[str, Any] = {"method": method, "url": url}
        self.attempts.append(record)
        if self.signer is not None:
            headers = {**headers, **self.signer(url)}
        outcome: list[HttpResult | BaseException] = []

        def exchange() -> None:
            try:
                outcome.append(self._exchange(method, url, headers, content, remaining, record))
            except BaseException as exc:  # handed to the caller's thread below
                outcome.append(exc)

        worker = threading.Thread(target=exchange, name="muretai-http", daemon=True)
        worker.start()
        worker.join(remaining)
        if not outcome:
            record["error"] = "deadline"
            raise self.deadline_error(f"waiting for {method} {url}")
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    def _exchange(self, method: str, url: str, headers: dict[str, str], content: bytes | None,
                  remaining: float, record: dict[str, Any]) -> HttpResult:
        # setdefault: once the caller has given up ("deadline"), an abandoned worker's later
        # failure must not rewrite what was reported.
        try:
            with self._client.stream(method, url, headers=headers, content=content,
                                     timeout=httpx.Timeout(remaining)) as response:
                record["status"] = response.status_code
                return self._read(method, url, response)
        except MuretaiError as exc:
            record.setdefault("error", exc.code)
            if isinstance(exc, DeadlineExceeded | Refused):
                exc.data.update(self.report())
            raise
        except httpx.TimeoutException:
            record.setdefault("error", "deadline")
            raise self.deadline_error(f"waiting for {method} {url}") from None
        except httpx.TransportError as exc:
            record.setdefault("error", "unreachable")
            raise Unreachable("unreachable", f"{method} {url}: {type(exc).__name__}: "
                                             f"{str(exc)[:200]}",
                              data=self.report()) from None
        except httpx.HTTPError as exc:  # e.g. an invalid URL for httpx
            record.setdefault("error", "bad-url")
            raise InputError("bad-url", f"{url[:200]}: {exc}") from None

    def _read(self, method: str, url: str, response: httpx.Response) -> HttpResult:
        headers = {k.lower(): v for k, v in response.headers.items()}
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            raise self._too_large(url)
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise Refused("unsupported-encoding", f"{url} sent a {encoding[:40]} body; muretai "
                                                  "asks for and reads only identity bodies")
        chunks: list[bytes] = []
        size = 0
        # A transport may hand back a body already in memory (tests); a real one streams.
        source = iter([response.content]) if response.is_stream_consumed \
            else response.iter_raw()
        for chunk in source:
            size += len(chunk)
            if size > self.max_bytes:
                raise self._too_large(url)  # the rest is never read
            chunks.append(chunk)
            if self.deadline.expired:
                raise self.deadline_error(f"reading {method} {url}")
        return HttpResult(method, url, response.status_code, headers, b"".join(chunks))

    def _too_large(self, url: str) -> Refused:
        return Refused("too-large", f"{url} sent more than {self.max_bytes} bytes; abandoned at "
                                    "the cap", hint="raise --max-bytes if this is expected",
                       data={"url": url, "maxBytes": self.max_bytes})
