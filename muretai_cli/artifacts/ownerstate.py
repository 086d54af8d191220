"""OwnerState (seam §6): an owner's signed list of the device DIDs it has taken away.

    {"typ": "muretai/ownerstate/1", "rootDid", "epoch", "revoked": [sorted, unique DIDs],
     "ts", "sig"}   -- sig by rootDid over the declared fields the record carries

Revocation only, on purpose: a list of the devices an owner HAS would be a public map from
device to owner. The list is capped (``MAX_REVOKED_DEVICES``), so a DID missing from it was
not disowned *within what this record can carry* — never "was never disowned" (seam §11).
``epoch`` orders two records; which one is in force is the holder's decision, not this
verifier's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from muretai_cli.artifacts._signed import int_field, str_field
from muretai_cli.errors import Refused
from muretai_cli.seam import SigningKey, canonical_bytes, check_signable, verify_signature
from muretai_cli.verdict import Reason, warning

OWNERSTATE_TYP = "muretai/ownerstate/1"
MAX_EPOCH = 2**31 - 1
MAX_REVOKED_DEVICES = 64
# A mint warns from here on: the right answer near the cap is a new owner key, not a longer list.
WARN_REVOKED_AT = 48
_SIGNED = ("typ", "rootDid", "epoch", "revoked", "ts")


@dataclass(frozen=True, slots=True)
class OwnerState:
    """A verified OwnerState. Built only by ``verify_owner_state``."""

    root_did: str
    epoch: int
    revoked: tuple[str, ...]
    ts: int
    record: Mapping[str, Any] = field(repr=False)

    def disowns(self, device_did: str) -> bool:
        """True when listed. False means "not in this capped list", not "never disowned"."""
        return device_did in self.revoked

    def to_json(self) -> dict[str, Any]:
        return dict(self.record)


def signed_payload(record: Mapping[str, Any]) -> bytes:
    """The declared signed fields the record carries (so a later field can be added)."""
    body = {k: record[k] for k in _SIGNED if k in record}
    check_signable(body)
    return canonical_bytes(body)


def verify_owner_state(obj: object, *, root_did: str) -> OwnerState:
    """An OwnerState for the owner the CALLER names, or ``Refused``: ``malformed-owner-state``,
    ``wrong-typ``, ``float-in-payload``, ``non-canonical-revoked``, ``root-mismatch``,
    ``missing-sig`` or a signature code. Unknown top-level keys are ignored."""
    if not isinstance(obj, dict):
        raise Refused("malformed-owner-state", "an OwnerState is a JSON object")
    if obj.get("typ") != OWNERSTATE_TYP:
        raise Refused("wrong-typ", f"typ must be {OWNERSTATE_TYP!r}")
    owner = str_field(obj, "rootDid", code="malformed-owner-state")
    epoch = int_field(obj, "epoch", code="malformed-owner-state")
    ts = int_field(obj, "ts", code="malformed-owner-state")
    if not 0 <= epoch <= MAX_EPOCH:
        raise Refused("malformed-owner-state", f"epoch must be 0..{MAX_EPOCH}")
    revoked = obj.get("revoked")
    if not isinstance(revoked, list) or len(revoked) > MAX_REVOKED_DEVICES or any(
            not isinstance(d, str) or not d for d in revoked):
        raise Refused("malformed-owner-state", f"revoked is a list of at most "
                                               f"{MAX_REVOKED_DEVICES} non-empty strings")
    if revoked != sorted(set(revoked)):
        raise Refused("non-canonical-revoked", "revoked must be sorted and without repeats; a "
                                               "re-ordered copy would be a second record")
    if owner != root_did:
        raise Refused("root-mismatch", f"the OwnerState is for {owner}, not {root_did}")
    if obj.get("sig") is None:
        raise Refused("missing-sig", "the OwnerState carries no signature")
    verify_signature(owner, signed_payload(obj), obj["sig"])
    return OwnerState(owner, epoch, tuple(revoked), ts, dict(obj))


def normalize_revoked(dids: Iterable[str]) -> tuple[list[str], int]:
    """De-duplicated in the caller's order, the newest ``MAX_REVOKED_DEVICES`` kept, sorted;
    with how many were dropped off the front."""
    unique = list(dict.fromkeys(dids))
    kept = unique[-MAX_REVOKED_DEVICES:]
    return sorted(kept), len(unique) - len(kept)


def cap_warnings(count: int, dropped: int) -> list[Reason]:
    """What a mint must say as the list nears its cap (seam §11)."""
    if dropped:
        return [warning("revocations-dropped", f"{dropped} older revocation(s) fell off the "
                        f"{MAX_REVOKED_DEVICES}-entry cap and are no longer enforced by this "
                        "record; rotate to a new owner key instead of a longer list")]
    if count >= WARN_REVOKED_AT:
        return [warning("revocations-near-cap", f"{count} of {MAX_REVOKED_DEVICES} revocation "
                        "slots used; beyond the cap the oldest fall off silently; plan a new "
                        "owner key")]
    return []


def mint_owner_state(owner: SigningKey, *, epoch: int, revoked: Iterable[str], now: int
                     ) -> tuple[dict[str, Any], list[Reason]]:
    """A signed OwnerState, and the cap warnings its caller must show."""
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not 0 <= epoch <= MAX_EPOCH:
        raise Refused("bad-epoch", f"epoch must be an integer 0..{MAX_EPOCH}")
    kept, dropped = normalize_revoked(revoked)
    body = {"typ": OWNERSTATE_TYP, "rootDid": owner.did, "epoch": epoch, "revoked": kept,
            "ts": now}
    return {**body, "sig": owner.sign(signed_payload(body))}, cap_warnings(len(kept), dropped)
