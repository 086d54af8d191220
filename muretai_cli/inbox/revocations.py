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
    REVOCATION_FETCH_SECONDS,
)

if TYPE_CHECKING:
    from muretai_cli.inbox.proposals import VouchBook
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.net import ClientFor, SafeClient



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
        entry = self._cache.get(issuer)
        if self.is_fresh(entry):
            self._cache.move_to_end(issuer)
            return entry.found if entry is not None else None
        entry = self.fetched(issuer, endpoint, entry, relay=self.relay_for(issuer))
        self.keep(issuer, entry)
        return entry.found

    def is_fresh(self, entry: _Entry | None) -> bool:
        return entry is not None and self.clock() - entry.checked < self.max_age

    def relay_for(self, issuer: str) -> str | None:
        """The relay ``issuer`` is reached through (asked of the store: on the caller's
        thread, never on a fetch's)."""
        return self.relay_of(issuer) if self.relay_of is not None else None

    def fetched(self, issuer: str, endpoint: str | None, old: _Entry | None, *,
                relay: str | None) -> _Entry:
        """The issuer's list fetched and verified now, as a cache entry: the list already
        verified (``old``'s) is kept when the fetch fails or would roll it back."""
        now = self.clock()
        kept = old.found if old is not None else None
        try:
            fresh = self._fetch(issuer, endpoint, int(now), relay)
            if kept is not None and fresh.iat < kept.iat:
                raise Refused("rolled-back", "the list is older than one already verified")
            return _Entry(now, fresh, None)
        except MuretaiError as exc:
            self.problems[issuer] = exc.code
            if self.on_problem is not None:
                self.on_problem(issuer, exc.code)
            return _Entry(now, kept, exc.code)

    def keep(self, issuer: str, entry: _Entry) -> None:
        """Cache ``entry`` as the issuer's newest, the least recently used dropped past
        the bound."""
        self._cache[issuer] = entry
        self._cache.move_to_end(issuer)
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)

    def entry(self, issuer: str) -> _Entry | None:
        return self._cache.get(issuer)

    def _fetch(self, issuer: str, endpoint: str | None, now: int,
               relay: str | None) -> RevocationList:
        problem: MuretaiError = Refused("no-revocation-source", "the credential names no "
                                                                "issuerEndpoint and the "
                                                                "issuer no relay")
        if endpoint:
            try:
                return self._from_door(issuer, endpoint, now)
            except MuretaiError as exc:
                problem = exc
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



class BackgroundRevocations:
    """A ``RevocationChecker`` for a process that must not wait on the network while it
    judges (the door, whose judging may run on its event loop): ``revoked`` answers from the
    lists already verified, and an issuer whose list is missing or past the cache's age is
    fetched again on a thread, one fetch per issuer at a time. Until an issuer's first list
    arrives its credentials count as unrevoked (the problem reported), the rule an
    unreachable issuer gets (docs/trust.md)."""

    def __init__(self, checker: RevocationChecker) -> None:
        import threading

        self.checker = checker
        self._lock = threading.Lock()
        self._busy: set[str] = set()

    def revoked(self, issuer: str, credential_id: str, endpoint: str | None) -> bool:
        with self._lock:
            entry = self.checker.entry(issuer)
            if not self.checker.is_fresh(entry) and issuer not in self._busy:
                self._busy.add(issuer)
                self._refresh(issuer, endpoint, entry, self.checker.relay_for(issuer))
        found = entry.found if entry is not None else None
        return found is not None and credential_id in found.revoked

    def _refresh(self, issuer: str, endpoint: str | None, old: _Entry | None,
                 relay: str | None) -> None:
        import threading

        def fetch() -> None:
            try:
                entry = self.checker.fetched(issuer, endpoint, old, relay=relay)
                with self._lock:
                    self.checker.keep(issuer, entry)
            finally:
                with self._lock:
                    self._busy.discard(issuer)

        threading.Thread(target=fetch, name="revocations", daemon=True).start()


def safe_client(seconds: float, max_bytes: int) -> SafeClient:
    """The project's safe HTTP client (public addresses only), for fetching a list."""
    from muretai_cli.net import SafeClient

    return SafeClient(timeout=seconds, max_bytes=max_bytes)


def vouch_book(store: IdentityStore, me: str, *, background: bool) -> VouchBook:
    """The gate's ``VouchBook`` for one identity: its proposals' reviews, its own
    revocations, and its issuers' published lists (fetched on a thread when ``background``:
    the door; else waited for: a drain)."""
    from muretai_cli.inbox.proposals import VouchBook

    checker = RevocationChecker(safe_client, relay_of=store.peer_relay,
                                timeout=REVOCATION_FETCH_SECONDS)
    return VouchBook(store, me, BackgroundRevocations(checker) if background else checker)
