"""The revocation checker's cache (inbox/revocations.py): bounded in entries and in age,
observed by counting the fetches a served transport answers (no socket), and a list older
than one already verified refused."""

from __future__ import annotations

import json
from typing import Any

import httpx

from muretai_cli.artifacts.vouch import mint_revocations
from muretai_cli.inbox.revocations import RevocationChecker
from muretai_cli.net import SafeClient
from muretai_cli.seam import SigningKey
from muretai_cli.seam._limits import REVOCATION_CACHE_ENTRIES, REVOCATION_CACHE_SECONDS
from tests.clock import Clock

NOW = 1_800_000_000
ISSUERS = [SigningKey(bytes([i] * 32)) for i in range(1, 5)]


class Lists:
    """Serves each issuer's signed list at https://<n>.example/.well-known/…, counting."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.asked: list[str] = []
        self.iat: dict[str, int] = {}
        self.ids: dict[str, list[str]] = {}

    def handler(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        self.asked.append(host)
        key = ISSUERS[int(host.split(".")[0])]
        doc = mint_revocations(key, self.ids.get(host, ["urn:r"]), now=self.iat.get(host, int(self.clock.now)))
        return httpx.Response(200, content=json.dumps(doc).encode())

    def client_for(self, seconds: float, max_bytes: int) -> SafeClient:
        return SafeClient(timeout=seconds, max_bytes=max_bytes,
                          transport=httpx.MockTransport(self.handler))


def endpoint(n: int) -> str:
    return f"https://{n}.example"


def checker(lists: Lists, **kw: Any) -> RevocationChecker:
    return RevocationChecker(lists.client_for, clock=lists.clock, **kw)


def test_the_bounds_are_the_limits_module_s() -> None:
    lists = Lists(Clock(NOW))
    made = checker(lists)
    assert (made.max_entries, made.max_age) == (REVOCATION_CACHE_ENTRIES,
                                                REVOCATION_CACHE_SECONDS)


def test_an_entry_is_fetched_again_only_after_its_age() -> None:
    clock = Clock(NOW)
    lists = Lists(clock)
    check = checker(lists, max_age=300)
    for _ in range(5):
        assert check.revoked(ISSUERS[0].did, "urn:r", endpoint(0))
    assert len(lists.asked) == 1
    clock.advance(299)
    check.revoked(ISSUERS[0].did, "urn:r", endpoint(0))
    assert len(lists.asked) == 1
    clock.advance(1)
    check.revoked(ISSUERS[0].did, "urn:r", endpoint(0))
    assert len(lists.asked) == 2


def test_the_cache_holds_at_most_its_entries_least_recently_used_dropped() -> None:
    lists = Lists(Clock(NOW))
    check = checker(lists, max_entries=2)
    for n in (0, 1, 0, 2):  # 0 used again before 2 comes: 1 is the one dropped
        check.revoked(ISSUERS[n].did, "urn:r", endpoint(n))
    assert check.cached() == 2
    assert lists.asked == ["0.example", "1.example", "2.example"]
    check.revoked(ISSUERS[0].did, "urn:r", endpoint(0))
    assert len(lists.asked) == 3  # still cached
    check.revoked(ISSUERS[1].did, "urn:r", endpoint(1))
    assert lists.asked[-1] == "1.example"  # dropped, so fetched again


def test_an_older_list_than_one_verified_is_refused_and_the_newer_kept() -> None:
    clock = Clock(NOW)
    lists = Lists(clock)
    check = checker(lists, max_age=0)
    assert check.revoked(ISSUERS[0].did, "urn:r", endpoint(0))
    lists.iat["0.example"] = NOW - 3600  # a replayed old list, from before the revocation
    lists.ids["0.example"] = []
    assert check.revoked(ISSUERS[0].did, "urn:r", endpoint(0))
    assert check.problems[ISSUERS[0].did] == "rolled-back"
