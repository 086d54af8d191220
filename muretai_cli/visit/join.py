"""Answering an invite: one signed ``onboard/claim``, to the inviter's door (JSON-RPC over
HTTP) or sealed and deposited at its relay."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import PeerRefused

if TYPE_CHECKING:
    from muretai_cli.net import SafeClient
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
