"""An inviter receiving an ``onboard/claim``, whichever way it came (door or relay drain).

The order is the rule: the claim's message through the receiving pipeline (``arrival``:
``read_envelope`` -- the six fields, addressed to me, signed by the depositor on a relay,
fresh within ``CLAIM_WINDOW`` -- then ``Arrival.verify``, the signature), then the binding
of its side fields; then the nonce, which must be one THIS identity
issued, unexpired, with a use left, spent atomically together with recording the joiner as a
contact; only then is the joiner an allowed sender. Anything that fails changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muretai_cli.artifacts.invite import Claim, claim_message, claim_of
from muretai_cli.errors import Refused
from muretai_cli.inbox import ladder
from muretai_cli.inbox.arrival import CLAIM_WINDOW, read_envelope
from muretai_cli.inbox.invites import Contact, InviteStore
from muretai_cli.inbox.ladder import Code, RpcError

if TYPE_CHECKING:
    from muretai_cli.inbox.store import IdentityStore


@dataclass(frozen=True, slots=True)
class Joined:
    """A claim that was honoured: who joined, under what name, and whether it is new."""

    claim: Claim
    new_contact: bool

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "joiner": self.claim.from_did, "name": self.claim.name,
                "newContact": self.new_contact,
                "notes": [{"code": n.code, "message": n.detail} for n in self.claim.notes]}


def read_claim(obj: object, *, me: str, now: int, signer: str | None = None) -> Claim:
    """A claim for ``me`` (the caller's own DID), its message read and verified by the
    receiving pipeline as of ``now`` (``read_envelope`` with ``CLAIM_WINDOW``, then
    ``Arrival.verify``), then its text, side fields and their binding; or ``Refused`` with
    the rule's name. ``signer``: the DID that deposited it, when a relay carried it."""
    claim, message = claim_message(obj)
    try:
        arrival = read_envelope(message, me=me, now=now, window=CLAIM_WINDOW, signer=signer)
        arrival.verify(now=now)
    except RpcError as exc:
        raise Refused(exc.reason, exc.detail or ladder.MESSAGES[exc.code]) from None
    fields = arrival.fields()
    if arrival.signed_timestamp is not None:
        fields["timestamp"] = arrival.signed_timestamp  # claim_of refuses all but an integer
    return claim_of(claim, fields)


def process_claim(obj: object, *, me: str, store: IdentityStore, now: int,
                  rate: Callable[[str], None] | None = None,
                  deposited: int | None = None, signer: str | None = None) -> Joined:
    """Honour a claim for the identity ``me`` or raise ``Refused`` having changed nothing.

    Nothing is read from the store before the claim read and verified (``read_claim``);
    ``rate`` (the door's per-sender limit) is then charged to the signer. Then one
    transaction: a sender the owner blocked stays blocked (``blocked``, nothing spent), the
    nonce is spent, the joiner recorded as a contact and made an allowed sender; all of it
    or none.

    ``deposited``: a relayed claim, judged as of when the relay took it (its ``received``;
    the inviter reads it at its next turn-check, maybe days later): signed within the claim
    window of that moment, and the invite unexpired then; ``signer``: its depositor. Revocation
    and uses are judged now. The relay's age window is the caller's (``inbox.relayed``).
    """
    claim = read_claim(obj, me=me, now=now if deposited is None else deposited, signer=signer)
    if rate is not None:
        rate(claim.from_did)
    joiner = Contact(claim.from_did, claim.name, claim.relay, claim.enc_pub, claim.url,
                     now, "claimed-invite")
    new_contact = InviteStore(store.db).redeem(
        claim.nonce, joiner, now, admit=lambda tx: store.admit_joiner(tx, joiner.did, now),
        valid_at=deposited)
    return Joined(claim, new_contact)


_RPC_CODES = {"wrong-recipient": Code.NOT_FOR_ME, "stale": Code.REPLAY_OR_STALE,
              "from-the-future": Code.REPLAY_OR_STALE, "blocked": Code.INTRODUCTION_REQUIRED,
              "malformed-claim": Code.INVALID_PARAMS, "claim-fields-altered": Code.INVALID_PARAMS,
              "unknown-nonce": Code.GRANT_REFUSED, "revoked-invite": Code.GRANT_REFUSED,
              "expired-invite": Code.GRANT_REFUSED, "invite-used-up": Code.GRANT_REFUSED,
              "reclaim-addresses-differ": Code.GRANT_REFUSED}


def rpc_code(reason: str) -> Code:
    """The door's JSON-RPC code for a refused claim (the signature's, by default)."""
    return _RPC_CODES.get(reason, Code.SIGNATURE)
