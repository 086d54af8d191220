"""The door's card: built from its config and store, re-signed when it changes and hourly,
served as bytes; its terms (the recipe a keyless walk-in is given); its Web Bot Auth key
directory."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from muretai_cli import __version__
from muretai_cli.artifacts.message import REPLY_BINDING
from muretai_cli.db import DatabaseUnavailable
from muretai_cli.inbox import ladder
from muretai_cli.urls import REVOCATIONS_PATH

if TYPE_CHECKING:
    from muretai_cli.door.config import DoorConfig
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.seam import SigningKey

__all__ = ["PROTOCOL_VERSION", "RESIGN_EVERY", "SCHEME", "PublishedCard", "terms"]

RESIGN_EVERY = 3600
PROTOCOL_VERSION = "0.2"
SCHEME = "did-key-ed25519"


def _publish(card: dict[str, Any], config: DoorConfig, endpoint: str) -> None:
    """The card's published extras: the owner's skills, declared order and interfaces."""
    from muretai_cli.door.publish import supported_interfaces

    card["skills"].extend(dict(s) for s in config.skills)
    if config.prefer:
        card["agentEntry"]["prefer"] = [p if isinstance(p, str) else dict(p)
                                        for p in config.prefer]
    card["supportedInterfaces"] = supported_interfaces(endpoint, PROTOCOL_VERSION)


class PublishedCard:
    """One identity's card as its door serves it, and the signed envelope around it."""

    def __init__(self, key: SigningKey, config: DoorConfig, store: IdentityStore,
                 clock: Callable[[], float],
                 build: Callable[[int], dict[str, Any]] | None = None) -> None:
        self.key = key
        self.did = key.did
        self.config = config
        self.store = store
        self.clock = clock
        self.origin = config.url.origin
        self._wba: tuple[int, bytes, tuple[tuple[bytes, bytes], ...]] | None = None
        self._card_rev: str | None = None
        self._card_bytes = b""
        self._card_exp = 0
        self._env_bytes = b""
        self._env_ts = 0
        endpoint = config.url.text if config.url.path else config.url.origin + "/"
        self.terms = terms(self.did, endpoint, config.policy)
        # what builds the card when it changed (``card``; the door passes its own)
        self.build = build or self.card

    def card(self, now: int) -> dict[str, Any]:
        grant = self.store.card_grant(now)
        open_door = self.config.policy == "open"
        card: dict[str, Any] = {
            "name": self.config.name,
            "description": "A muretai door: signed A2A messages (six fields, Ed25519, did:key).",
            "url": self.config.url.text,
            "did": self.did,
            "version": __version__,
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"streaming": False, "pushNotifications": False},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{
                "id": "dm", "name": "signed-direct-message",
                "description": "Send a signed message/send; the answer is a signed reply. "
                               f"Policy: {self.config.policy}.",
                "tags": ["dm", "signed", "did:key"],
            }],
            "agentEntry": {"open_door": open_door},
            "muretai": {"open_door": open_door, "dmPolicy": self.config.policy,
                        "methods": list(ladder.METHODS), "replyBinding": REPLY_BINDING,
                        "revocations": self.config.url.join(REVOCATIONS_PATH)},
        }
        card["securitySchemes"] = {SCHEME: {
            "type": SCHEME,
            "description": "Sign every message/send with an Ed25519 did:key over the six "
                           "fields; the recipe is under agentEntry beside this line.",
            "agentEntry": self.terms,
        }}
        card["security"] = [{SCHEME: []}]
        _publish(card, self.config, self.terms["endpoint"])
        if grant is not None:
            card["contact"] = grant.doc
        if self.config.org is not None:
            card["org"] = self.config.org
        if self.config.keystate is not None:  # which op key signs for this DID, root-signed
            card["keystate"] = self.config.keystate
        return card

    def _refresh(self, now: int) -> None:
        """Rebuild the card when it changed, re-sign it then and at most hourly otherwise.

        With the database away, the card already signed is served as it is (its envelope
        stays valid for a while); without one, ``DatabaseUnavailable`` reaches the caller.
        """
        try:
            rev = self.store.card_revision()
        except DatabaseUnavailable:
            if self._card_bytes:
                return
            raise
        if rev != self._card_rev or (self._card_exp and now >= self._card_exp):
            from muretai_cli.seam import canonical_bytes

            card = self.build(now)
            contact = card.get("contact")
            self._card_exp = int(contact["exp"]) if contact else 0
            body = canonical_bytes(card)
            self._card_rev = rev
            if body != self._card_bytes:
                self._card_bytes = body
                self._sign(card, now)
                return
        if now - self._env_ts >= RESIGN_EVERY:
            from muretai_cli.seam import parse_document

            self._sign(parse_document(self._card_bytes), now)

    def _sign(self, card: dict[str, Any], now: int) -> None:
        from muretai_cli.seam import canonical_bytes, sign_card_envelope

        self._env_bytes = canonical_bytes(sign_card_envelope(self.key, card, now))
        self._env_ts = now

    def wba_directory(self) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
        """This identity's Web Bot Auth key directory, signed over the door's own @authority
        (seam §8) and re-signed hourly: ``(body, headers)``."""
        from muretai_cli.seam import authority_of, sign_directory

        now = int(self.clock())
        if self._wba is None or now - self._wba[0] >= RESIGN_EVERY:
            body, signed = sign_directory(self.key, authority_of(self.origin), created=now)
            headers = tuple((k.lower().encode(), v.encode()) for k, v in signed.items())
            self._wba = (now, body, (*headers, (b"access-control-allow-origin", b"*"),
                                     (b"cache-control", b"max-age=300")))
        return self._wba[1], self._wba[2]

    def card_bytes(self) -> bytes:
        self._refresh(int(self.clock()))
        return self._card_bytes

    def envelope_bytes(self) -> bytes:
        self._refresh(int(self.clock()))
        return self._env_bytes


def terms(did: str, endpoint: str, policy: str) -> dict[str, Any]:
    """The door's terms, published on the card and returned to a keyless walk-in (one object)."""
    from muretai_cli.seam import MESSAGE_WINDOW

    return {
        "scheme": SCHEME,
        "instruction": "Make an Ed25519 key pair (any crypto library), derive your did:key, "
                       "sign the six fields below and POST the request shown in "
                       "exampleRequest to endpoint. No account is needed. This door's "
                       f"policy is {policy}: a new sender may need a contact grant "
                       "(contact/redeem) or the owner's approval.",
        "in": "params.message.metadata",
        "endpoint": endpoint,
        "recipient": did,
        "identity": "metadata.from = did:key:z + base58btc(0xed01 followed by the 32-byte "
                    "Ed25519 public key)",
        "signedFields": ["contextId", "from", "messageId", "text", "timestamp", "to"],
        "canonicalization": "A JSON object of exactly the six fields, keys sorted by code "
                            "point, separators ',' and ':', no whitespace, non-ASCII as is, "
                            "UTF-8; contextId is null when there is no conversation yet, and "
                            "is still signed.",
        "signature": "metadata.sig = standard padded base64 of the 64-byte Ed25519 signature "
                     "over those bytes",
        "timestamp": f"metadata.timestamp = integer epoch seconds, within {MESSAGE_WINDOW} s "
                     "of this door's clock",
        "exampleRequest": {
            "jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": {
                "kind": "message", "role": "user", "messageId": "<a fresh unique id>",
                "contextId": None, "parts": [{"kind": "text", "text": "<your message>"}],
                "metadata": {"from": "<your did:key>", "to": did,
                             "timestamp": "<integer epoch seconds, a JSON number>",
                             "sig": "<base64 signature over the six fields>"}}},
        },
    }
