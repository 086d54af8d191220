"""Web Bot Auth at the door (seam §8): who made the HTTP request that carried a knock.

A knock may carry ``Signature-Input``, ``Signature`` and ``Signature-Agent``. The door then
fetches the key directory served at the ``Signature-Agent`` origin, keeps the keys that
directory proves for its own origin, and verifies the request under them for the door's
``@authority``. The verdict (``verified`` with the DID, or ``refused`` with the reason) is
recorded with the message and in the door's events. It decides nothing: the message's own
signature still admits or refuses the knock, and a refused WBA refuses no message.

Bounds, so that a hostile ``Signature-Agent`` costs the door little:

* a request that no key could make valid (wrong tag, out of its window, ``@authority`` not
  covered, malformed headers) is refused before any fetch;
* the directory comes from public addresses only (loopback and private ones are refused
  unless the door allows them: a test network), through the safe client: a deadline of
  ``FETCH_SECONDS``, at most ``MAX_DIRECTORY_BYTES``, same-origin redirects only;
* fetches run on worker threads; the event loop only awaits them, and never longer than
  the deadline. At most ``MAX_FETCHES`` run at once: past that a knock is recorded
  ``wba-busy`` at once instead of queueing. Knocks naming one origin share one fetch;
* what a fetch brought (a directory, or why there was none) is kept per origin for
  ``CACHE_SECONDS`` (``FAILURE_SECONDS`` for a failure), at most ``CACHE_ENTRIES`` origins,
  the least recently used leaving first. A cached directory is verified again at each use,
  so its own signature's expiry still holds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.verdict import Reason

FETCH_SECONDS = 3.0
MAX_FETCHES = 4
CACHE_SECONDS = 300
FAILURE_SECONDS = 60
CACHE_ENTRIES = 256
MAX_AGENT_CHARS = 512  # how much of a peer's Signature-Agent text is recorded
_HEADERS = ("signature-input", "signature", "signature-agent")
log = logging.getLogger("uvicorn.error")


@dataclass(frozen=True, slots=True)
class WbaVerdict:
    """The door's finding on one signed request: ``verified`` names the DID whose key
    signed it; ``refused`` names the rule that failed. ``agent`` is the request's
    ``Signature-Agent`` URL as sent (None when absent or unreadable)."""

    state: Literal["verified", "refused"]
    agent: str | None
    did: str | None = None
    reason: Reason | None = None

    def __post_init__(self) -> None:
        if self.state == "verified" and (self.did is None or self.reason is not None):
            raise ValueError("a verified WBA verdict names a DID and no reason")
        if self.state == "refused" and (self.reason is None or self.did is not None):
            raise ValueError("a refused WBA verdict names a reason and no DID")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state, "agent": self.agent}
        if self.did is not None:
            out["did"] = self.did
        if self.reason is not None:
            out["reason"] = {"code": self.reason.code, "message": self.reason.detail}
        return out


def is_signed(headers: Mapping[str, str]) -> bool:
    """True when a request carries any of the Web Bot Auth headers (lowercased names)."""
    return any(name in headers for name in _HEADERS)


@dataclass(frozen=True, slots=True)
class Fetched:
    """What one fetch of a key directory brought: the response, or why there is none."""

    until: float  # on the door's clock
    headers: Mapping[str, str]
    body: bytes
    error: MuretaiError | None = None


class WbaCheck:
    """Verifies the Web Bot Auth signature of requests made to ``authority`` (the door's)."""

    def __init__(self, authority: str, *, allow_private: bool = False,
                 clock: Callable[[], float] = time.time, fetch_seconds: float | None = None,
                 max_fetches: int = MAX_FETCHES, cache_entries: int = CACHE_ENTRIES,
                 fetch: Callable[[str], Fetched] | None = None) -> None:
        self.authority = authority.lower()
        self.allow_private = allow_private
        self.clock = clock
        self.fetch_seconds = FETCH_SECONDS if fetch_seconds is None else fetch_seconds
        self.max_fetches = max_fetches
        self.cache_entries = cache_entries
        self.fetch = fetch or self.fetch_directory
        self._cache: OrderedDict[str, Fetched] = OrderedDict()
        self._pending: dict[str, asyncio.Future[Fetched]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    async def check(self, headers: Mapping[str, str]) -> WbaVerdict:
        """The verdict on one request's headers (lowercased names); never raises."""
        from muretai_cli.seam import signature_agent_url

        agent = signature_agent_url(headers)
        if agent is not None:
            agent = agent[:MAX_AGENT_CHARS]
        try:
            did = await self._verify(headers, agent)
        except MuretaiError as exc:
            return WbaVerdict("refused", agent, reason=Reason(exc.code, exc.detail))
        except Exception:  # a verifier is total; this keeps the knock answered if one is not
            log.exception("door: Web Bot Auth check failed")
            return WbaVerdict("refused", agent, reason=Reason("wba-error", "the check failed"))
        return WbaVerdict("verified", agent, did=did)

    async def _verify(self, headers: Mapping[str, str], agent: str | None) -> str:
        from muretai_cli.seam import (
            authority_of,
            jwk_from_public,
            precheck_request,
            public_from_did,
            verify_directory,
            verify_request,
        )
        from muretai_cli.urls import origin_of

        precheck_request(headers, authority=self.authority, now=int(self.clock()))
        if agent is None:
            raise Refused("wba-no-agent", "no Signature-Agent (a quoted URL) names where the "
                                          "signer's key directory is")
        origin = origin_of(agent)
        if origin is None:
            raise Refused("wba-bad-agent", f"Signature-Agent {agent[:200]!r} is not an http(s) "
                                           "URL with a host")
        fetched = await self._directory(origin)
        if fetched.error is not None:
            raise fetched.error
        now = int(self.clock())
        proven = verify_directory(fetched.headers, fetched.body, authority=authority_of(origin),
                                  now=now)
        jwks = {"keys": [jwk_from_public(public_from_did(did)[1]) for did in proven]}
        return verify_request(headers, authority=self.authority, jwks=jwks, now=now)

    async def _directory(self, origin: str) -> Fetched:
        """The cached fetch for ``origin``, one already under way, or a new one."""
        kept = self._cache.get(origin)
        if kept is not None:
            if kept.until > self.clock():
                self._cache.move_to_end(origin)
                return kept
            del self._cache[origin]
        pending = self._pending.get(origin)
        if pending is None:
            if len(self._pending) >= self.max_fetches:
                return self._failed(Refused("wba-busy", f"{self.max_fetches} key directories "
                                                        "are being fetched already"))
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_fetches, thread_name_prefix="door-wba")
            pending = asyncio.get_running_loop().run_in_executor(self._pool, self.fetch, origin)
            self._pending[origin] = pending
            pending.add_done_callback(lambda done: self._fetched(origin, done))
        try:
            return await asyncio.wait_for(asyncio.shield(pending), self.fetch_seconds + 0.5)
        except TimeoutError:
            return self._failed(Refused("wba-timeout", f"the key directory of {origin} did not "
                                                       f"arrive within {self.fetch_seconds:g} s"))

    def _fetched(self, origin: str, done: asyncio.Future[Fetched]) -> None:
        self._pending.pop(origin, None)
        if done.cancelled() or done.exception() is not None:
            return
        self._cache[origin] = done.result()
        self._cache.move_to_end(origin)
        while len(self._cache) > self.cache_entries:
            self._cache.popitem(last=False)

    def _failed(self, error: MuretaiError) -> Fetched:
        return Fetched(self.clock() + FAILURE_SECONDS, {}, b"", error)

    def fetch_directory(self, origin: str) -> Fetched:
        """GET ``origin``'s key directory with the safe client (runs on a worker thread)."""
        from muretai_cli.net import SafeClient, check_request_url, private_addresses
        from muretai_cli.seam import DIRECTORY_MEDIA_TYPE, DIRECTORY_PATH, MAX_DIRECTORY_BYTES

        try:
            url = check_request_url(origin + DIRECTORY_PATH)
            if not self.allow_private:
                found = private_addresses(urlsplit(origin).hostname or "")
                if found:
                    raise Refused("wba-private-address",
                                  f"{origin} resolves to a private or loopback address "
                                  f"({', '.join(found[:4])}); the door fetches key directories "
                                  "from public addresses only")
            with SafeClient(timeout=self.fetch_seconds, max_bytes=MAX_DIRECTORY_BYTES) as client:
                got = client.get(url, accept=DIRECTORY_MEDIA_TYPE)
            if got.status != 200:
                raise Refused("wba-no-directory", f"{url} answered HTTP {got.status}")
        except MuretaiError as exc:
            return self._failed(exc)
        return Fetched(self.clock() + CACHE_SECONDS, got.headers, got.body)
