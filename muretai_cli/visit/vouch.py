"""Sending the trust wire that is ours: ``introduce/propose`` (the introducer to the target)
and ``introduce/respond`` (the target's decision back), to a door as JSON-RPC over HTTP or
sealed and deposited at a relay, as a claim goes (``join``)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muretai_cli.artifacts.vouch import (
    PROPOSE_METHOD,
    RESPOND_METHOD,
    Decision,
    Reach,
    mint_proposal,
    mint_response,
)
from muretai_cli.errors import InputError, PeerRefused, Refused

if TYPE_CHECKING:
    from muretai_cli.inbox.proposals import ProposalRow
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.net import ClientFor
    from muretai_cli.seam import SigningKey



@dataclass(frozen=True, slots=True)
class Peer:
    """How to reach a peer: its door's POST endpoint, or its relay (and ``enc_pub``, looked
    up on the card it published there when not given)."""

    did: str
    url: str | None = None
    relay: str | None = None
    enc_pub: str | None = None


def send_request(key: SigningKey, peer: Peer, method: str, params: Mapping[str, Any], *,
                 client_for: ClientFor, now: int, timeout: float = 30.0) -> dict[str, Any]:
    """One JSON-RPC request to ``peer``: POSTed to its door (the door's ``result``, or
    ``PeerRefused``), else sealed to its ``enc_pub`` and deposited at its relay
    (``{"queued": True, …}``)."""
    from muretai_cli.seam import canonical_bytes

    request = {"jsonrpc": "2.0", "id": f"intro-{secrets.token_hex(6)}", "method": method,
               "params": dict(params)}
    if peer.url:
        from muretai_cli.visit.dm import _rpc_answer

        with client_for(timeout, 1024 * 1024) as client:
            doc = _rpc_answer(client.post_json(peer.url, canonical_bytes(request)), method)
        result = doc.get("result")
        if not isinstance(result, dict) or result.get("ok") is not True:
            raise PeerRefused("intro-refused", f"the door did not confirm {method}",
                              data={"result": result if isinstance(result, dict) else None})
        return {"channel": "door", "address": peer.url, **result}
    if peer.relay:
        from muretai_cli.seam import seal_box
        from muretai_cli.visit.relay import RelayClient, card_freshness

        relay = RelayClient(peer.relay, client_for, timeout=timeout)
        enc_pub = peer.enc_pub
        if enc_pub is None:
            card = relay.card(peer.did, now=now)
            card_freshness(card, now)
            enc_pub = card.enc_pub
        if enc_pub is None:
            raise Refused("unreachable-identity", f"the card of {peer.did} names no enc_pub")
        blob = seal_box(key, enc_pub, canonical_bytes(request), ad=b"")
        return {"channel": "relay", "address": relay.url, "queued": True,
                "deposit": relay.deposit(key, to=peer.did, blob=blob)}
    raise InputError("not-connected", f"no way to reach {peer.did} is known",
                     hint="give --url ENDPOINT (its door) or --relay URL")


def propose(key: SigningKey, credential: Mapping[str, Any], *, target: Peer,
            store: IdentityStore, client_for: ClientFor, now: int, note: str | None = None,
            reach: Reach | None = None, timeout: float = 30.0) -> dict[str, Any]:
    """Propose ``credential`` (issued by ``key``, introducing someone to ``target``) for
    the target's review, and record it as sent so the target's answer is recognised.
    ``reach``: where the target can answer (this identity's door URL, relay, enc_pub).
    Returns the door's answer (``state`` ``held``, ``proposalId``) or the deposit's."""
    from muretai_cli.inbox.proposals import ProposalBook

    claims = credential.get("credentialSubject")
    named = claims.get("introducedTo") if isinstance(claims, Mapping) else None
    if named != target.did:
        raise InputError("wrong-target", f"the credential introduces to {str(named)[:120]}, "
                                         f"not to {target.did}")
    if credential.get("issuer") != key.did:
        raise InputError("not-the-issuer", "only the issuer of a credential proposes it")
    proposal = mint_proposal(key, credential, to=target.did, now=now, note=note, reach=reach)
    book = ProposalBook(store.db)
    book.record_sent(proposal["id"], str(credential.get("id")), target.did, now)
    answer = send_request(key, target, PROPOSE_METHOD, proposal, client_for=client_for,
                          now=now, timeout=timeout)
    return {"proposalId": proposal["id"], "credentialId": credential.get("id"),
            "state": answer.get("state", "queued"), **answer}


def respond(key: SigningKey, row: ProposalRow, decision: Decision, *,
            client_for: ClientFor, now: int, timeout: float = 30.0) -> dict[str, Any]:
    """Tell the introducer of ``row`` the owner's decision, by the reach its proposal
    signed (its door, else its relay)."""
    response = mint_response(key, to=row.introducer, proposal_id=row.wire_id,
                             credential_id=row.credential_id, decision=decision, now=now)
    peer = Peer(row.introducer, row.reach.url, row.reach.relay, row.reach.enc_pub)
    return send_request(key, peer, RESPOND_METHOD, response, client_for=client_for, now=now,
                        timeout=timeout)
