"""KeyState (seam §6): a root DID delegating to a rotatable operational key, with a ratchet.

    {"typ": "muretai/keystate/1", "rootDid", "epoch", "rootKey", "rootNextHash", "opDid",
     "opNextHash", "encPub", "encNextHash", "guardiansHash", "revokedOps", "notBefore",
     "notAfter", "ts", ["encPubPqHash"], "sig"}   -- sig by rootKey over those fields

A record is authentic when ``rootKey`` signed it; authentic is not fresh. A thief holding a
retired op key can replay an older record in which that key was still current, so the answer
to "which key signs for this root now" needs memory: a pinned KeyState the CALLER verified and
kept. ``resolve_op_did`` is that ratchet, and it never raises on a record a stranger can mint.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from muretai_cli.artifacts._signed import int_field, str_field, verify_under_key_hex
from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam import SigningKey, canonical_bytes, check_signable, public_from_did
from muretai_cli.verdict import Reason, warning

KEYSTATE_TYP = "muretai/keystate/1"
MAX_EPOCH = 2**31 - 1
# The mint keeps only the newest burns: every record stays constant-size (seam reference).
MAX_REVOKED_OPS = 4
_SIGNED = ("typ", "rootDid", "epoch", "rootKey", "rootNextHash", "opDid", "opNextHash",
           "encPub", "encNextHash", "guardiansHash", "revokedOps", "notBefore", "notAfter", "ts")
# Present only on records that bind a post-quantum key; its presence selects the longer list.
_PQ_FIELD = "encPubPqHash"


@dataclass(frozen=True, slots=True)
class KeyState:
    """A structurally valid KeyState. Built only by ``parse_keystate``; not yet verified."""

    root_did: str
    epoch: int
    root_key: str
    op_did: str
    burned: tuple[str, ...]
    revoked_ops_is_list: bool
    not_before: int
    not_after: int | None
    ts: int
    record: Mapping[str, Any] = field(repr=False)

    @property
    def genesis_key(self) -> str:
        """The hex key the root DID itself names (epoch-0 root, no rotation)."""
        return public_from_did(self.root_did)[1].hex()

    @property
    def root_rotated(self) -> bool:
        return self.root_key != self.genesis_key

    def burns(self, did: str) -> bool:
        """Does this record's ``revokedOps`` burn ``did``? A list, or nothing is burned."""
        return did in self.burned

    def payload(self) -> bytes:
        return signed_payload(self.record)

    def to_json(self) -> dict[str, Any]:
        return dict(self.record)


def signed_payload(record: Mapping[str, Any]) -> bytes:
    """The bytes ``rootKey`` signs: every declared field (absent ones as null), never ``sig``
    nor unknown keys. Floats anywhere in them are ``float-in-payload``."""
    names = _SIGNED + ((_PQ_FIELD,) if _PQ_FIELD in record else ())
    body = {k: record.get(k) for k in names}
    check_signable(body)
    return canonical_bytes(body)


def parse_keystate(obj: object) -> KeyState:
    """The one way from JSON to a ``KeyState``, or ``Refused`` naming the broken field."""
    if not isinstance(obj, dict):
        raise Refused("malformed-keystate", "a KeyState is a JSON object")
    if obj.get("typ") != KEYSTATE_TYP:
        raise Refused("wrong-typ", f"typ must be {KEYSTATE_TYP!r}")
    root_did = str_field(obj, "rootDid", code="malformed-keystate")
    public_from_did(root_did)
    epoch = int_field(obj, "epoch", code="malformed-keystate")
    if not 0 <= epoch <= MAX_EPOCH:
        raise Refused("malformed-keystate", f"epoch must be 0..{MAX_EPOCH}")
    root_key = str_field(obj, "rootKey", code="malformed-keystate", limit=64)
    if len(root_key) != 64 or any(c not in "0123456789abcdef" for c in root_key):
        raise Refused("malformed-keystate", "rootKey is 64 lowercase hex characters")
    op_did = str_field(obj, "opDid", code="malformed-keystate")
    public_from_did(op_did)
    not_before = obj.get("notBefore")
    not_before = 0 if not_before is None else int_field(obj, "notBefore",
                                                        code="malformed-keystate")
    not_after = None if obj.get("notAfter") is None else int_field(
        obj, "notAfter", code="malformed-keystate")
    ts = int_field(obj, "ts", code="malformed-keystate")
    if obj.get("sig") is None:
        raise Refused("missing-sig", "the KeyState carries no signature")
    revoked = obj.get("revokedOps")
    is_list = isinstance(revoked, list)
    burned = tuple(d for d in revoked if isinstance(d, str)) if isinstance(revoked, list) else ()
    return KeyState(root_did, epoch, root_key, op_did, burned, is_list, not_before, not_after,
                    ts, dict(obj))


def check_signed_by_root_key(ks: KeyState) -> None:
    """``sig`` verifies under the ``rootKey`` the record claims (whatever that key is)."""
    sig = ks.record.get("sig")
    if isinstance(sig, str):
        _verified_once(ks.root_key, ks.payload(), sig)
    else:
        verify_under_key_hex(ks.root_key, ks.payload(), sig)


@lru_cache(maxsize=1024)
def _verified_once(root_key: str, payload: bytes, sig: str) -> None:
    """One verification per (key, bytes, signature): a sender attaches the same record to
    every message, and a door should not pay for its signature each time. A refusal raises,
    and ``lru_cache`` keeps no raise, so only a record that verified is remembered."""
    verify_under_key_hex(root_key, payload, sig)


def verify_keystate(obj: object, *, root_did: str, now: int | None = None) -> KeyState:
    """A KeyState for the root the CALLER names, signed by that root's own key, valid at
    ``now`` when given; or ``Refused``: ``root-mismatch``, ``root-rotated`` (no lineage can
    travel inline), a signature code, ``not-yet-valid``, ``expired``."""
    ks = _genesis_signed(obj, root_did)
    if now is not None and now < ks.not_before:
        raise Refused("not-yet-valid", f"valid from {ks.not_before}, judged at {now}")
    if now is not None and ks.not_after is not None and now > ks.not_after:
        raise Refused("expired", f"valid until {ks.not_after}, judged at {now}")
    return ks


# Records that parsed and verified under their root DID's own key, by their canonical bytes
# (a sender attaches the same record to every message; a door pays for it once).
_GENESIS_SIGNED: OrderedDict[bytes, KeyState] = OrderedDict()
_GENESIS_SIGNED_MAX = 1024


def _genesis_signed(obj: object, root_did: str) -> KeyState:
    """``obj`` parsed, for ``root_did``, not root-rotated and signed by that DID's own key,
    or ``Refused`` (``root-mismatch``; ``root-rotated``: no lineage can travel inline). The
    record's bytes decide all but the first, so a success is kept by its canonical bytes."""
    try:
        canon = canonical_bytes(obj) if isinstance(obj, dict) else None
    except MuretaiError:
        canon = None
    ks = _GENESIS_SIGNED.get(canon) if canon is not None else None
    if ks is not None:
        if ks.root_did != root_did:
            raise Refused("root-mismatch", f"the KeyState is for {ks.root_did}, not {root_did}")
        return ks
    ks = parse_keystate(obj)
    if ks.root_did != root_did:
        raise Refused("root-mismatch", f"the KeyState is for {ks.root_did}, not {root_did}")
    if ks.root_rotated:
        raise Refused("root-rotated", "rootKey is not the root DID's own key; a rotated root "
                                      "is accepted only through a verified pin")
    check_signed_by_root_key(ks)
    if canon is not None:
        _GENESIS_SIGNED[canon] = ks
        if len(_GENESIS_SIGNED) > _GENESIS_SIGNED_MAX:
            _GENESIS_SIGNED.popitem(last=False)
    return ks


def verify_pin(obj: object, *, root_did: str) -> KeyState:
    """A pinned KeyState the caller kept, checked before it is trusted (seam §6.1 rule 1).

    Same root; signed by the ``rootKey`` it claims (a root-rotated pin included: its
    lineage is the store's business, its signature is not); no validity window, because an
    expired pin is still what we know of this identity.
    """
    ks = parse_keystate(obj)
    if ks.root_did != root_did:
        raise Refused("root-mismatch", f"the pin is for {ks.root_did}, not {root_did}")
    check_signed_by_root_key(ks)
    return ks


Source = Literal["inline", "pin", "root"]


@dataclass(frozen=True, slots=True)
class Resolution:
    """Which key signs for ``root_did`` now, where that answer came from, and why.

    ``in_force`` is the verified record that decided (the one a pin store should keep).
    """

    root_did: str
    op_did: str
    source: Source
    in_force: KeyState | None
    notes: tuple[Reason, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"rootDid": self.root_did, "opDid": self.op_did, "source": self.source,
                "epoch": self.in_force.epoch if self.in_force else None,
                "notes": [{"code": r.code, "message": r.detail} for r in self.notes]}


def resolve_op_did(root_did: str, inline: object, pinned: object, *, now: int) -> Resolution:
    """The operational DID for ``root_did``: the ratchet of seam §6.1. Total: never raises.

    ``pinned`` is the caller's kept record (None: first contact). A pin that does not verify
    fails closed to the root. ``inline`` displaces the pin only when it verifies at ``now``,
    under the same ``rootKey``, at a strictly greater epoch. The pin's burn list binds
    whatever the inline one says; a burned answer falls back to the pin's own op key, and to
    the root when that one is burned too.
    """
    notes: list[Reason] = []
    pin: KeyState | None = None
    if pinned is not None:
        try:
            pin = verify_pin(pinned, root_did=root_did)
        except MuretaiError as exc:
            notes.append(warning("pin-unusable", f"{exc.code}: {exc.detail}"))
            return Resolution(root_did, root_did, "root", None, tuple(notes))
    current = pin
    source: Source = "pin" if pin else "root"
    if inline is not None:
        try:
            ks = verify_keystate(inline, root_did=root_did, now=now)
        except MuretaiError as exc:
            notes.append(warning("inline-refused", f"{exc.code}: {exc.detail}"))
        else:
            if pin is None:
                current, source = ks, "inline"
            elif ks.root_key != pin.root_key:
                notes.append(warning("root-changed", "the inline record is signed by another "
                                     "root key than the pin; a root rotation needs a new pin"))
            elif ks.epoch > pin.epoch:
                current, source = ks, "inline"
            elif ks.epoch == pin.epoch and ks.payload() != pin.payload():
                notes.append(warning("keystate-fork", f"a different record at the pinned "
                                     f"epoch {pin.epoch}; the pinned one is kept"))
            elif ks.epoch < pin.epoch:
                notes.append(warning("keystate-rollback", f"epoch {ks.epoch} is older than "
                                     f"the pinned epoch {pin.epoch}"))
    for record in {id(r): r for r in (current, pin) if r is not None}.values():
        if not record.revoked_ops_is_list and record.record.get("revokedOps") is not None:
            notes.append(warning("revoked-ops-not-a-list", f"epoch {record.epoch}: revokedOps "
                                 "is not a list, so it burns nothing"))
    op = current.op_did if current is not None else root_did
    if pin is not None and pin.burns(op):
        held = pin.op_did
        notes.append(warning("op-revoked", f"{op} is burned by the pinned record"))
        if pin.burns(held):
            return Resolution(root_did, root_did, "root", pin, tuple(notes))
        return Resolution(root_did, held, "pin", pin, tuple(notes))
    if current is not None and current.burns(op):
        notes.append(warning("op-revoked", f"epoch {current.epoch} burns its own opDid"))
        return Resolution(root_did, root_did, "root", current, tuple(notes))
    return Resolution(root_did, op, source if current else "root", current, tuple(notes))


def replaces_pin(new: KeyState, stored: KeyState | None) -> bool:
    """May a pin store swap ``stored`` for ``new`` (both already verified)? Only at a
    strictly greater epoch under the same root key."""
    return stored is None or (new.root_key == stored.root_key and new.epoch > stored.epoch)


def burn_list(revoked_ops: Iterable[str], op_did: str) -> tuple[list[str], list[Reason]]:
    """The ``revokedOps`` a mint writes (de-duplicated, never its own ``op_did``, the newest
    ``MAX_REVOKED_OPS`` kept) and what the minter must be told about the cap (seam §11: a
    capped list in a signed record makes absence no proof)."""
    wanted = [d for d in dict.fromkeys(revoked_ops) if d != op_did]
    kept = wanted[-MAX_REVOKED_OPS:]
    dropped = len(wanted) - len(kept)
    if dropped:
        return kept, [warning("revoked-ops-dropped", f"{dropped} older burned op key(s) fell "
                              f"off the {MAX_REVOKED_OPS}-entry revokedOps: a receiver holding "
                              "only this record no longer sees them burned (one that pinned a "
                              "later KeyState still refuses them: the pin's key is in force)")]
    if len(kept) == MAX_REVOKED_OPS:
        return kept, [warning("revoked-ops-full", f"revokedOps is full ({MAX_REVOKED_OPS}): "
                              "the next rotation pushes the oldest burned key off it")]
    return kept, []


def mint_keystate(root: SigningKey, *, op_did: str, epoch: int, now: int,
                  not_after: int | None = None, revoked_ops: list[str] | None = None,
                  enc_pub: str = "") -> dict[str, Any]:
    """A genesis-rooted KeyState signed by ``root``: the shape ``verify_keystate`` accepts."""
    public_from_did(op_did)
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not 0 <= epoch <= MAX_EPOCH:
        raise Refused("bad-epoch", f"epoch must be an integer 0..{MAX_EPOCH}")
    if not_after is not None and not_after <= now:
        raise Refused("bad-expiry", "notAfter must be in the future")
    burned, _ = burn_list(revoked_ops or [], op_did)
    body: dict[str, Any] = {
        "typ": KEYSTATE_TYP, "rootDid": root.did, "epoch": epoch,
        "rootKey": root.public_bytes.hex(), "rootNextHash": "", "opDid": op_did,
        "opNextHash": "", "encPub": enc_pub, "encNextHash": "", "guardiansHash": "",
        "revokedOps": burned, "notBefore": 0, "notAfter": not_after, "ts": now}
    return {**body, "sig": root.sign(signed_payload(body))}


# -- op keys in messaging: which key verifies a message from a root DID ------------------

@dataclass(frozen=True, slots=True)
class MessageSigner:
    """The DID whose key must have signed a message ``from`` a root DID, and the verified
    record a pin store should keep afterwards (None: nothing new to pin)."""

    signer_did: str
    adopt: KeyState | None = None


def message_signer(root_did: str, inline: object, pinned: object, *, now: int
                   ) -> MessageSigner:
    """The verifying key of a received message, given its ``metadata.keystate`` (``inline``,
    None when absent) and the caller's pin for ``root_did`` (None: first contact).

    No record: the root's own key. A record: it must verify under ``root_did`` at ``now``
    (seam §6.1 rule 1), and against a pin it must come from the same ``rootKey``, at the
    pinned epoch with the same bytes or a strictly greater one (rule 2), and name an op key
    that neither it nor the pin burns (rule 3). Anything else is ``Refused`` with a
    ``keystate-…`` reason of its own; nothing falls back to a weaker answer.
    """
    if inline is None:
        return MessageSigner(root_did)
    try:
        ks = verify_keystate(inline, root_did=root_did, now=now)
    except MuretaiError as exc:
        code = exc.code.removesuffix("-keystate")
        raise Refused(f"keystate-{code}", f"the attached KeyState: {exc.detail}") from None
    pin: KeyState | None = None
    if pinned is inline:  # the pin holds this very record: verified just now
        pin = ks
    elif pinned is not None:
        try:
            pin = verify_pin(pinned, root_did=root_did)
        except MuretaiError as exc:
            raise Refused("keystate-pin-unusable", f"the kept pin for {root_did} does not "
                          f"verify ({exc.code}); refusing rather than trusting it") from None
        if ks.root_key != pin.root_key:
            raise Refused("keystate-root-changed", "the record is signed by another root key "
                                                   "than the pinned one")
        if ks.epoch < pin.epoch:
            raise Refused("keystate-rollback", f"epoch {ks.epoch} is older than the pinned "
                                               f"epoch {pin.epoch}")
        if ks.epoch == pin.epoch and ks.payload() != pin.payload():
            raise Refused("keystate-fork", f"another record at the pinned epoch {pin.epoch}")
        if pin.burns(ks.op_did):
            raise Refused("keystate-revoked-op", f"{ks.op_did} is burned by the pinned record "
                                                 f"(epoch {pin.epoch})")
    if ks.burns(ks.op_did):
        raise Refused("keystate-revoked-op", f"epoch {ks.epoch} burns its own opDid")
    return MessageSigner(ks.op_did, ks if replaces_pin(ks, pin) else None)
