"""Whether an issuer revoked an introduction: its signed list, fetched, verified, cached.

Where the list is read, in order: the issuer's door (``issuerEndpoint``, which the issuer
signed into the credential) at ``<endpoint>/.well-known/muretai-revocations.json``; then,
for an issuer reached through a relay, the ``revocations`` field of the card it published
there (the card's envelope verified under the issuer, the list under the issuer again).

The rule when no list can be had (docs/trust.md, "When the issuer is unreachable"): the
introduction is **not** taken as revoked, and the failure is reported (``problems``,
``on_problem``). A list that verifies and names the id is the only thing that makes
``revoked`` true; a forged or tampered list is no list. A list once verified is kept (and
used, reported stale) when a later fetch fails, and a list older than one already verified
is refused (``rolled-back``), so a revocation once seen is not forgotten by an outage or a
replayed old list while its cache entry lives.

Bounds (``seam/_limits``): at most ``REVOCATION_CACHE_ENTRIES`` issuers (least recently
used dropped), each fetched again after ``REVOCATION_CACHE_SECONDS``; a failure is cached
as long, so an unreachable issuer costs one fetch per window, not one per message; a list
is at most ``MAX_REVOCATIONS_BYTES``.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from muretai_cli.artifacts.vouch import RevocationList, verify_revocations
from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam._limits import (
    MAX_REVOCATIONS_BYTES,
    REVOCATION_CACHE_ENTRIES,
    REVOCATION_CACHE_SECONDS,
)

if TYPE_CHECKING:
    from muretai_cli.net import SafeClient

ClientFor = Callable[[float, int], "SafeClient"]


@dataclass(frozen=True, slots=True)
class _Entry:
    checked: float
    found: RevocationList | None
    problem: str | None


class RevocationChecker:
    """``revoked(issuer, credential_id, endpoint)`` over issuers' published lists.

    ``client_for(seconds, max_bytes)`` makes the project's safe HTTP client for one fetch;
    ``relay_of(issuer)`` names the relay an issuer is reached through (None: no relay);
    ``on_problem(issuer, reason)`` is told each time a list could not be had.
    """

    def __init__(self, client_for: ClientFor, *, clock: Callable[[], float] = time.time,
                 relay_of: Callable[[str], str | None] | None = None,
                 on_problem: Callable[[str, str], None] | None = None,
                 timeout: float = 10.0, max_entries: int = REVOCATION_CACHE_ENTRIES,
                 max_age: int = REVOCATION_CACHE_SECONDS) -> None:
        self.client_for = client_for
        self.clock = clock
        self.relay_of = relay_of
        self.on_problem = on_problem
        self.timeout = timeout
        self.max_entries = max_entries
        self.max_age = max_age
        self.fetches = 0  # lists asked for over the network (what the cache saves)
        self.problems: dict[str, str] = {}  # issuer -> why its list could not be had, last
        self._cache: OrderedDict[str, _Entry] = OrderedDict()

    def revoked(self, issuer: str, credential_id: str, endpoint: str | None) -> bool:
        found = self.list_for(issuer, endpoint)
        return found is not None and credential_id in found.revoked

    def cached(self) -> int:
        return len(self._cache)

    def list_for(self, issuer: str, endpoint: str | None) -> RevocationList | None:
        """The issuer's verified list (from the cache while it is fresh), or None when
        none could be had (reported)."""
        now = self.clock()
        entry = self._cache.get(issuer)
        if entry is not None and now - entry.checked < self.max_age:
            self._cache.move_to_end(issuer)
            return entry.found
        kept = entry.found if entry is not None else None
        try:
            fresh = self._fetch(issuer, endpoint, int(now))
            if kept is not None and fresh.iat < kept.iat:
                raise Refused("rolled-back", "the list is older than one already verified")
            entry = _Entry(now, fresh, None)
        except MuretaiError as exc:
            entry = _Entry(now, kept, exc.code)
            self.problems[issuer] = exc.code
            if self.on_problem is not None:
                self.on_problem(issuer, exc.code)
        self._cache[issuer] = entry
        self._cache.move_to_end(issuer)
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        return entry.found

    def _fetch(self, issuer: str, endpoint: str | None, now: int) -> RevocationList:
        problem: MuretaiError = Refused("no-revocation-source", "the credential names no "
                                                                "issuerEndpoint and the "
                                                                "issuer no relay")
        if endpoint:
            try:
                return self._from_door(issuer, endpoint, now)
            except MuretaiError as exc:
                problem = exc
        relay = self.relay_of(issuer) if self.relay_of is not None else None
        if relay:
            return self._from_relay(issuer, relay, now)
        raise problem

    def _get(self, url: str) -> object:
        from muretai_cli.seam import parse_document

        self.fetches += 1
        with self.client_for(self.timeout, MAX_REVOCATIONS_BYTES) as client:
            result = client.get(url)
        if result.status == 404:
            raise Refused("no-revocation-list", f"{url} answered 404")
        if result.status != 200:
            raise Refused("revocations-unavailable", f"{url} answered HTTP {result.status}")
        return parse_document(result.body)

    def _from_door(self, issuer: str, endpoint: str, now: int) -> RevocationList:
        from muretai_cli.urls import REVOCATIONS_PATH, base_from_any

        url = base_from_any(endpoint, require_https=True).join(REVOCATIONS_PATH)
        return verify_revocations(self._get(url), issuer=issuer, now=now)

    def _from_relay(self, issuer: str, relay: str, now: int) -> RevocationList:
        from muretai_cli.seam import verify_card_envelope
        from muretai_cli.urls import parse_base_url

        doc = self._get(parse_base_url(relay).join(f"/card/{issuer}"))
        card = verify_card_envelope(doc, expected_did=issuer)
        listed = card.get("revocations")
        if listed is None:
            raise Refused("no-revocation-list", "the issuer's relay card carries no "
                                                "revocations")
        return verify_revocations(listed, issuer=issuer, now=now)
