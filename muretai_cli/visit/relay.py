"""A relay's client side (issue 8 §2's HTTP contract): deposit, listen, ack, cards.

The relay is not trusted: a card it returns is verified under the DID asked for, a listen
answer is read through the seam's parse boundary under a byte cap, and each waiting item is
checked for its fields before anyone looks at it. Nothing here opens a box; that is the
receiver's job (``inbox.relayed``).

Each request has its own deadline (a long-poll must not eat a deposit's time), and a
deposit whose answer is lost (timeout, reset) is retried with the same ``id`` and blob: the
relay stores one ``(to, from, id)`` once.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import DeadlineExceeded, InputError, PeerRefused, Refused, Unreachable
from muretai_cli.urls import BaseUrl, parse_base_url

if TYPE_CHECKING:
    from muretai_cli.net import ClientFor, HttpResult, SafeClient
    from muretai_cli.seam import SigningKey

MAX_LISTEN_BYTES = 8 * 1024 * 1024
MAX_WAIT = 30
DEFAULT_WAIT = 25
DEPOSIT_ATTEMPTS = 4  # the first and up to 3 retries, same id and blob
_ITEM_FIELDS = ("id", "from", "from_enc", "blob")
_ERROR_CODE = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")  # a relay's error code, taken as a name


def relay_base(url: str) -> BaseUrl:
    """A relay URL in its one canonical spelling (http only on loopback)."""
    return parse_base_url(url)


def new_deposit_id() -> str:
    """128 random bits, hex: a deposit's id, kept across its retries."""
    return secrets.token_hex(16)


def new_epoch() -> int:
    """A listener's epoch: chosen once per listening process, sortable by creation time."""
    return time.time_ns() // 1000


@dataclass(frozen=True, slots=True)
class Waiting:
    """One waiting item as the relay listed it; ``problem`` when its fields are unusable."""

    id: str | None
    sender: str | None
    from_enc: str | None
    blob: str | None
    received: int | None
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class ListenAnswer:
    items: list[Waiting]
    more: bool
    size: int = 0  # bytes of the answer's body



def relay_card(key: SigningKey, *, name: str, relay: str, door: str = "",
               revocations: dict[str, Any] | None = None) -> dict[str, Any]:
    """The card an identity publishes on its relay, unsigned (``publish_signed`` signs
    it): its DID, the name it goes by, its door's URL ("" for relay only), the relay and
    its sealed-box key; with ``revocations`` (its signed list) when it revoked any
    introduction, where those who check its vouches look."""
    card: dict[str, Any] = {"did": key.did, "name": name, "url": door, "relay": relay,
                            "enc_pub": key.enc_pub}
    if revocations is not None:
        card["revocations"] = revocations
    return card


@dataclass(frozen=True, slots=True)
class RelayCard:
    """A card fetched from a relay and verified under the DID asked for."""

    did: str
    card: dict[str, Any]
    ts: int

    @property
    def url(self) -> str:
        url = self.card.get("url")
        return url if isinstance(url, str) else ""

    @property
    def relay(self) -> str | None:
        relay = self.card.get("relay")
        return relay if isinstance(relay, str) and relay else None

    @property
    def enc_pub(self) -> str | None:
        enc = self.card.get("enc_pub")
        return enc if isinstance(enc, str) and enc else None


def _item(raw: object) -> Waiting:
    if not isinstance(raw, dict):
        return Waiting(None, None, None, None, None, "item-not-an-object")
    values = {k: raw.get(k) for k in _ITEM_FIELDS}
    missing = [k for k, v in values.items() if not isinstance(v, str)]
    received = raw.get("received")
    stamp = received if isinstance(received, int) and not isinstance(received, bool) else None
    return Waiting(values["id"] if isinstance(values["id"], str) else None,
                   values["from"] if isinstance(values["from"], str) else None,
                   values["from_enc"] if isinstance(values["from_enc"], str) else None,
                   values["blob"] if isinstance(values["blob"], str) else None, stamp,
                   f"missing-{missing[0].replace('_', '-')}" if missing else None)


class RelayClient:
    """One relay, reached through ``client_for(seconds)`` (one safe client per request)."""

    def __init__(self, url: str | BaseUrl, client_for: ClientFor, *,
                 timeout: float = 30.0) -> None:
        self.base = url if isinstance(url, BaseUrl) else relay_base(url)
        self._client_for = client_for
        self.timeout = timeout
        self._kept: SafeClient | None = None

    @property
    def url(self) -> str:
        return self.base.text

    @contextmanager
    def kept_alive(self) -> Iterator[None]:
        """Requests inside the block share one client, so one kept-alive connection (a
        drain's back-to-back listens and acks: no connect, no new client per request),
        each with its own deadline and byte cap; closed when the block ends, so no idle
        connection outlives a burst (the relay closes idle ones after a few seconds)."""
        if self._kept is not None:
            yield
            return
        self._kept = self._client_for(self.timeout, MAX_LISTEN_BYTES)
        try:
            yield
        finally:
            kept, self._kept = self._kept, None
            kept.close()

    def _post(self, route: str, body: dict[str, Any], *, seconds: float | None = None,
              max_bytes: int = 1024 * 1024) -> HttpResult:
        from muretai_cli.seam import canonical_bytes

        if self._kept is not None:
            self._kept.rearm(seconds or self.timeout, max_bytes)
            return self._kept.post_json(self.base.join(route), canonical_bytes(body))
        with self._client_for(seconds or self.timeout, max_bytes) as client:
            return client.post_json(self.base.join(route), canonical_bytes(body))

    def _answer(self, result: HttpResult, what: str) -> dict[str, Any]:
        """The relay's JSON answer; a refusal (``{error, message}``) as ``PeerRefused``."""
        from muretai_cli.seam import parse_document

        try:
            doc = parse_document(result.body)
        except InputError:
            doc = None
        if result.status != 200:
            code = doc.get("error") if isinstance(doc, dict) else None
            message = doc.get("message") if isinstance(doc, dict) else None
            name = code if isinstance(code, str) and _ERROR_CODE.fullmatch(code) \
                else "relay-refused"
            data: dict[str, Any] = {"status": result.status, "relayError": name}
            if result.retry_after is not None:
                data["retryAfter"] = result.retry_after
            from muretai_cli.visit.remedies import relay_remedy

            raise PeerRefused(name, f"the relay answered {what} with HTTP {result.status}"
                                    + (f": {str(message)[:200]}" if message else ""),
                              hint=relay_remedy(name, result.retry_after), data=data)
        if not isinstance(doc, dict):
            raise Refused("relay-malformed", f"the relay's answer to {what} is not a JSON object")
        return doc

    # -- sending ------------------------------------------------------------------------
    def deposit(self, key: SigningKey, *, to: str, blob: str,
                deposit_id: str | None = None) -> dict[str, Any]:
        """Deposit a sealed blob for ``to``; retried on a lost answer with the same id."""
        from muretai_cli.seam import sign_relay_send

        deposit_id = deposit_id or new_deposit_id()
        body = {"to": to, "from": key.did, "from_enc": key.enc_pub, "id": deposit_id,
                "blob": blob, "sig": sign_relay_send(key, to=to, deposit_id=deposit_id,
                                                     blob=blob)}
        last: Exception | None = None
        for attempt in range(DEPOSIT_ATTEMPTS):
            try:
                doc = self._answer(self._post("/send", body), "a deposit")
            except (DeadlineExceeded, Unreachable) as exc:
                last = exc
                continue
            if doc.get("queued") is not True:
                raise Refused("relay-malformed", "the relay did not say the deposit is queued")
            return {"id": deposit_id, "attempts": attempt + 1,
                    "duplicate": doc.get("duplicate") is True}
        raise last or Unreachable("relay-unreachable", "no deposit attempt was made")

    def publish(self, envelope: dict[str, Any]) -> None:
        """POST a signed card envelope (the relay verifies it; we verified it first)."""
        self._answer(self._post("/card", envelope), "a card")

    def publish_signed(self, key: SigningKey, card: dict[str, Any], now: int
                       ) -> dict[str, Any]:
        """Sign ``card`` at ``now`` and publish it; returns the envelope published. A relay
        keeps only a strictly newer envelope, so a card published again within the same
        second (a revocation, then ``card publish``) is signed once more just after the one
        the relay holds, when that one is this key's and at most ``REPUBLISH_AHEAD`` ahead
        (a card signed further ahead stays the relay's refusal: its clock, or someone with
        this key, is ahead of ours)."""
        from muretai_cli.errors import MuretaiError
        from muretai_cli.seam import sign_card_envelope
        from muretai_cli.seam._limits import REPUBLISH_AHEAD

        envelope = sign_card_envelope(key, card, now)
        try:
            self.publish(envelope)
            return envelope
        except MuretaiError as exc:
            if exc.code != "stale-card":
                raise
            held = self.card(key.did, now=now)
            if not now <= held.ts < now + REPUBLISH_AHEAD:
                raise
        envelope = sign_card_envelope(key, card, held.ts + 1)
        self.publish(envelope)
        return envelope

    def card(self, did: str, *, now: int) -> RelayCard:
        """The card the relay holds for ``did``, verified under ``did`` (never trusted)."""
        from muretai_cli.seam import verify_card_envelope

        with self._client_for(self.timeout, 256 * 1024) as client:
            result = client.get(self.base.join(f"/card/{did}"))
        if result.status == 404:
            raise Refused("no-card", f"{self.url} holds no card for {did}",
                          hint="the peer publishes one with `muretai card publish --as NAME`")
        doc = self._answer(result, "a card request")
        try:
            card = verify_card_envelope(doc, expected_did=did)
        except Refused as exc:
            raise Refused("card-refused", f"the card {self.url} returned for {did} does not "
                                          f"verify: {exc.code}: {exc.detail}") from None
        return RelayCard(did, dict(card), int(doc["ts"]))

    # -- receiving ----------------------------------------------------------------------
    def _token(self, key: SigningKey, epoch: int) -> dict[str, Any]:
        from muretai_cli.seam import sign_listen_token

        minute = int(time.time()) // 60
        return {"did": key.did, "minute": minute, "epoch": epoch,
                "token": sign_listen_token(key, minute=minute, origin=self.base.origin)}

    def listen(self, key: SigningKey, *, epoch: int, wait: int) -> ListenAnswer:
        """Waiting messages, oldest first; ``superseded`` (exit 4) for an older epoch."""
        wait = max(0, min(MAX_WAIT, wait))
        result = self._post("/listen", {**self._token(key, epoch), "wait": wait},
                            seconds=wait + 15, max_bytes=MAX_LISTEN_BYTES)
        doc = self._answer(result, "listen")
        messages = doc.get("messages")
        if not isinstance(messages, list):
            raise Refused("relay-malformed", "the relay's listen answer holds no message list")
        return ListenAnswer([_item(m) for m in messages], doc.get("more") is True,
                            len(result.body))

    def ack(self, key: SigningKey, *, epoch: int, ids: list[str]) -> int:
        if not ids:
            return 0
        doc = self._answer(self._post("/ack", {**self._token(key, epoch), "ids": ids}), "ack")
        acked = doc.get("acked")
        return acked if isinstance(acked, int) and not isinstance(acked, bool) else 0


def card_freshness(card: RelayCard, now: int) -> None:
    """A relay card dated ahead of now (beyond the seam's allowance) is refused."""
    from muretai_cli.seam import envelope_freshness

    if envelope_freshness(card.ts, now) == "from-the-future":  # stale still carries a box
        raise Refused("card-from-the-future", f"the card of {card.did} is dated ahead of now")
