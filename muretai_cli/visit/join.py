"""Answering an invite: one signed ``onboard/claim``, to the inviter's door (JSON-RPC over
HTTP) or sealed and deposited at its relay.

``join_invite`` is the whole of ``muretai join`` (and the MCP tool ``invite_accept``): verify
the invite, keep the inviter as a contact and an allowed sender, send the claim, then the
first message if one is given.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import InputError, PeerRefused, Refused

if TYPE_CHECKING:
    from muretai_cli.artifacts.invite import Invite
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.net import ClientFor, SafeClient
    from muretai_cli.seam import SigningKey
    from muretai_cli.visit.relay import RelayClient

CLAIM_RPC = "onboard/claim"


def claim_at_door(client: SafeClient, endpoint: str, claim: Mapping[str, Any]) -> dict[str, Any]:
    """POST the claim as JSON-RPC ``onboard/claim`` (its ``params`` is the claim); returns the
    door's ``result``, or ``PeerRefused`` with the door's JSON-RPC error."""
    from muretai_cli.seam import canonical_bytes
    from muretai_cli.visit.dm import _rpc_answer

    request = {"jsonrpc": "2.0", "id": f"claim-{secrets.token_hex(6)}", "method": CLAIM_RPC,
               "params": dict(claim)}
    doc = _rpc_answer(client.post_json(endpoint, canonical_bytes(request)), CLAIM_RPC)
    result = doc.get("result")
    if not isinstance(result, dict) or result.get("ok") is not True:
        raise PeerRefused("claim-refused", "the door did not confirm the claim",
                          data={"result": result if isinstance(result, dict) else None})
    return result


def claim_via_relay(relay: RelayClient, key: SigningKey, *, to: str, enc_pub: str,
                    claim: Mapping[str, Any]) -> dict[str, Any]:
    """Seal the claim (as a JSON-RPC ``onboard/claim`` request) to the inviter's ``enc_pub``
    and deposit it at its relay; the inviter judges it at its next ``turn-check``."""
    from muretai_cli.seam import canonical_bytes, seal_box

    request = {"jsonrpc": "2.0", "id": f"claim-{secrets.token_hex(6)}", "method": CLAIM_RPC,
               "params": dict(claim)}
    blob = seal_box(key, enc_pub, canonical_bytes(request), ad=b"")
    return {"queued": True, **relay.deposit(key, to=to, blob=blob)}


@dataclass
class Joiner:
    """Who answers an invite, with its store and how it reaches the net."""

    key: SigningKey
    name: str  # the name the claim gives the inviter
    store: IdentityStore
    client_for: ClientFor
    now: int
    my_relay: str | None = None  # where the inviter can write back (None: nowhere yet)
    timeout: float = 30.0
    max_bytes: int = 1024 * 1024
    # Told each note for the person as it arises (before a refusal that may follow).
    on_note: Callable[[str], None] | None = None


@dataclass(frozen=True, slots=True)
class JoinReport:
    """What joining did: ``doc`` is the JSON report (``ok`` first); ``by_door`` says the
    claim was answered at once (a door) rather than queued (a relay); ``notes`` are for the
    person (stderr in the CLI)."""

    invite: Invite
    doc: dict[str, Any]
    by_door: bool
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return bool(self.doc.get("ok"))


def join_invite(joiner: Joiner, invite: object, *, message: str | None = None
                ) -> JoinReport:
    """Verify ``invite`` (a parsed invite card), keep the inviter, send the signed claim
    (and ``message`` after it). Raises ``InputError`` for one's own invite or an invite
    with no way to answer it, and the network's errors as they come."""
    from muretai_cli.artifacts.invite import build_claim, verify_invite
    from muretai_cli.home import ConnectionStore
    from muretai_cli.inbox.invites import Contact, InviteStore
    from muretai_cli.urls import parse_base_url

    key, now = joiner.key, joiner.now
    got = verify_invite(invite, now=now)
    if got.did == key.did:
        raise InputError("own-invite", "this invite is your own")
    if not got.url and not (got.relay and got.enc_pub):
        raise InputError("unreachable-inviter", "the invite names neither a door url nor a "
                                                "relay with an enc_pub; there is no way to "
                                                "answer it")
    notes: list[str] = []
    if joiner.my_relay is None:  # the claim then carries no address: only a door answers
        notes.append(f"note: {joiner.name} has no relay, so the claim gives the inviter no "
                     f"way to write to you later (set one: muretai id relay {joiner.name} URL)")
        if joiner.on_note is not None:
            joiner.on_note(notes[-1])
    endpoint = parse_base_url(got.url).text if got.url else None
    known = InviteStore(joiner.store.db).add_contact(Contact(
        got.did, got.name, got.relay, got.enc_pub, endpoint, now, "joined-invite"))
    if joiner.store.sender_status(got.did) not in ("allowed", "approved"):
        joiner.store.set_sender(got.did, "allowed", now)
    claim = build_claim(key, invite=got, name=joiner.name, now=now, enc_pub=key.enc_pub,
                        relay=joiner.my_relay)
    out: dict[str, Any] = {"ok": True, "inviter": got.did, "name": got.name,
                           "via": endpoint or got.relay, "newContact": known}
    if endpoint is None:
        out.update(_join_by_relay(joiner, got, claim, message))
        return JoinReport(got, out, False, tuple(notes))
    with joiner.client_for(joiner.timeout, joiner.max_bytes) as client:
        out["claim"] = claim_at_door(client, endpoint, claim)
        if message:
            from muretai_cli.visit.dm import contact_and_dm

            report = contact_and_dm(key, got.did, message, client=client, now=now,
                                    connections=ConnectionStore(key.did), connect=endpoint)
            out["message"] = report.to_json()
            out["ok"] = report.exit_code == 0
    return JoinReport(got, out, True, tuple(notes))


def _join_by_relay(joiner: Joiner, got: Invite, claim: dict[str, Any], message: str | None
                   ) -> dict[str, Any]:
    """Deposit the sealed claim at the inviter's relay, then the first message the same way
    (both queued: the inviter judges them at its next turn-check, claim first)."""
    from muretai_cli.home import ConnectionStore
    from muretai_cli.visit.relay import RelayClient
    from muretai_cli.visit.send import Sender, send_dm

    if got.relay is None or got.enc_pub is None:  # join chose this way for having both
        raise Refused("unreachable-identity", "the invite names no relay and enc_pub")
    relay = RelayClient(got.relay, joiner.client_for, timeout=joiner.timeout)
    out: dict[str, Any] = {"claim": claim_via_relay(relay, joiner.key, to=got.did,
                                                    enc_pub=got.enc_pub, claim=claim)}
    if message:
        sender = Sender(joiner.key, joiner.store, ConnectionStore(joiner.key.did),
                        joiner.client_for, joiner.now, my_relay=joiner.my_relay,
                        timeout=joiner.timeout, max_bytes=joiner.max_bytes)
        report = send_dm(sender, got.did, message, relay_url=got.relay)
        out["message"] = report.to_json()
        out["ok"] = report.exit_code == 0
    return out
