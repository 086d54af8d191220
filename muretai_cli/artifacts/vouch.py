"""Proposals, responses and revocation lists: the parts of the trust wire that are ours.

The public contract names ``introduce/propose`` and ``introduce/respond`` and says a
revoked introduction is refused, but fixes no bytes for them (docs/trust.md, "Ours"). We
write them in the seam's style: ``typ`` inside the signed bytes, integer times, ``sig``
over the canonical bytes of the object without ``sig`` (``_signed``):

    proposal    {"typ": "muretai/intro-proposal/1", "id", "from": <issuer>, "to": <target>,
                 "credential": <AgentIntroduction>, "note"?: str, "reach"?: {"url"?,
                 "relay"?, "enc_pub"?}, "iat": int, "sig"}
    response    {"typ": "muretai/intro-response/1", "from": <target>, "to": <issuer>,
                 "proposalId", "credentialId", "decision": "approved" | "declined",
                 "iat": int, "sig"}
    revocations {"typ": "muretai/intro-revocations/1", "issuer", "revoked": [ids, sorted,
                 unique], "iat": int, "sig"}

Each has one verifier that takes who it must be for (``me``, ``issuer``) from its caller,
is total on hostile input and raises ``Refused`` with a named reason.
"""

from __future__ import annotations

import itertools
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from muretai_cli.artifacts._signed import int_field, sign_object, str_field, verify_object
from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam import CLOCK_SKEW, MAX_ID_LEN, SigningKey, is_enc_pub, public_from_did
from muretai_cli.seam._limits import MAX_PROPOSAL_NOTE, MAX_REVOKED, PROPOSAL_MAX_AGE

PROPOSAL_TYP = "muretai/intro-proposal/1"
RESPONSE_TYP = "muretai/intro-response/1"
REVOCATIONS_TYP = "muretai/intro-revocations/1"
PROPOSE_METHOD = "introduce/propose"
RESPOND_METHOD = "introduce/respond"
Decision = Literal["approved", "declined"]
DECISIONS: tuple[Decision, ...] = ("approved", "declined")
_ID = re.compile(r"[0-9a-f]{32}")  # a proposal id: 128 random bits, lowercase hex
_MAX_URL = 2048


def new_proposal_id() -> str:
    return secrets.token_hex(16)


# -- proposals ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Reach:
    """Where a signer says it can be answered, bound under its signature."""

    url: str | None = None
    relay: str | None = None
    enc_pub: str | None = None

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in (("url", self.url), ("relay", self.relay),
                                  ("enc_pub", self.enc_pub)) if v}


@dataclass(frozen=True, slots=True)
class Proposal:
    """A proposal whose signature verified for the target the caller named, carrying a
    credential that verified for that target and was issued by the proposer. Built only by
    ``verify_proposal``."""

    id: str
    issuer: str
    target: str
    credential_id: str
    subject: str
    note: str | None
    reach: Reach
    iat: int
    doc: Mapping[str, Any]


def mint_proposal(key: SigningKey, credential: Mapping[str, Any], *, to: str, now: int,
                  note: str | None = None, reach: Reach | None = None,
                  proposal_id: str | None = None) -> dict[str, Any]:
    """``key`` proposes its ``credential`` to ``to`` (the credential's recipient)."""
    public_from_did(to)
    if note is not None and len(note) > MAX_PROPOSAL_NOTE:
        raise Refused("note-too-long", f"a proposal's note is at most {MAX_PROPOSAL_NOTE} "
                                       "characters")
    body: dict[str, Any] = {"typ": PROPOSAL_TYP, "id": proposal_id or new_proposal_id(),
                            "from": key.did, "to": to, "credential": dict(credential),
                            "iat": now}
    if note:
        body["note"] = note
    if reach is not None and reach.to_json():
        body["reach"] = reach.to_json()
    return sign_object(key, body)


def verify_proposal(obj: object, *, me: str, now: int) -> Proposal:
    """A proposal for ``me`` at ``now``, or ``Refused``. In order: shape (``malformed``,
    ``wrong-typ``, ``float-in-payload``); ``to`` is me (``proposal-not-for-me``); the
    proposer's signature (``bad-signature``); ``iat`` (``issued-in-future``, ``stale``);
    the credential for me (``credential-<its reason>``); issued by ``from``
    (``issuer-not-proposer``)."""
    from muretai_cli.artifacts.introduction import verify_introduction

    if not isinstance(obj, Mapping):
        raise Refused("malformed", "a proposal is a JSON object")
    if obj.get("typ") != PROPOSAL_TYP:
        raise Refused("wrong-typ", f"typ must be {PROPOSAL_TYP!r}")
    pid = str_field(obj, "id", limit=64)
    if not _ID.fullmatch(pid):
        raise Refused("malformed", "a proposal id is 32 lowercase hex characters")
    sender = str_field(obj, "from", limit=512)
    target = str_field(obj, "to", limit=512)
    iat = int_field(obj, "iat")
    note = obj.get("note")
    if note is not None and (not isinstance(note, str) or len(note) > MAX_PROPOSAL_NOTE):
        raise Refused("malformed", f"note must be a string of at most {MAX_PROPOSAL_NOTE} "
                                   "characters")
    reach = _reach(obj.get("reach"))
    credential = obj.get("credential")
    if not isinstance(credential, Mapping):
        raise Refused("malformed", "credential must be an AgentIntroduction object")
    if not me or target != me:
        raise Refused("proposal-not-for-me", f"the proposal is for {target[:120]}, not {me}")
    _signed_by(obj, sender, "the proposer's", keep=("float-in-payload", "int-out-of-range"))
    _iat(iat, now)
    claims = credential.get("credentialSubject")
    subject = claims.get("id") if isinstance(claims, Mapping) else None
    if not isinstance(subject, str) or not subject:
        raise Refused("credential-malformed", "the credential names no subject")
    try:
        intro = verify_introduction(credential, subject=subject, recipient=me, now=now)
    except MuretaiError as exc:
        raise Refused(f"credential-{exc.code}", f"the proposed credential: {exc.detail}"
                      ) from None
    if intro.issuer != sender:
        raise Refused("issuer-not-proposer", f"the credential is issued by {intro.issuer}, "
                                             f"not by the proposer {sender}")
    return Proposal(pid, sender, target, intro.id, subject, note if note else None, reach,
                    iat, MappingProxyType(dict(obj)))


def _reach(raw: object) -> Reach:
    if raw is None:
        return Reach()
    if not isinstance(raw, Mapping):
        raise Refused("malformed", "reach must be an object of url, relay, enc_pub")
    values: dict[str, str | None] = {}
    for name in ("url", "relay", "enc_pub"):
        value = raw.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > _MAX_URL):
            raise Refused("malformed", f"reach.{name} must be a string")
        values[name] = value or None
    if values["enc_pub"] is not None and not is_enc_pub(values["enc_pub"]):
        raise Refused("malformed", "reach.enc_pub is 64 lowercase hex characters")
    return Reach(values["url"], values["relay"], values["enc_pub"])


def _iat(iat: int, now: int) -> None:
    if iat > now + CLOCK_SKEW:
        raise Refused("issued-in-future", f"iat is {iat - now} s in the future")
    if iat < now - PROPOSAL_MAX_AGE:
        raise Refused("stale", f"iat is more than {PROPOSAL_MAX_AGE // 86400} days old")


# -- responses ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Response:
    """A target's signed decision on a proposal, for the introducer the caller named."""

    target: str
    introducer: str
    proposal_id: str
    credential_id: str
    decision: Decision
    iat: int
    doc: Mapping[str, Any]


def mint_response(key: SigningKey, *, to: str, proposal_id: str, credential_id: str,
                  decision: Decision, now: int) -> dict[str, Any]:
    if decision not in DECISIONS:
        raise Refused("bad-decision", "a decision is approved or declined")
    return sign_object(key, {"typ": RESPONSE_TYP, "from": key.did, "to": to,
                             "proposalId": proposal_id, "credentialId": credential_id,
                             "decision": decision, "iat": now})


def verify_response(obj: object, *, me: str, now: int) -> Response:
    """A response to ``me`` (the introducer), or ``Refused``: ``malformed``, ``wrong-typ``,
    ``response-not-for-me``, ``bad-signature``, ``issued-in-future``, ``stale``."""
    if not isinstance(obj, Mapping):
        raise Refused("malformed", "a response is a JSON object")
    if obj.get("typ") != RESPONSE_TYP:
        raise Refused("wrong-typ", f"typ must be {RESPONSE_TYP!r}")
    sender = str_field(obj, "from", limit=512)
    target = str_field(obj, "to", limit=512)
    pid = str_field(obj, "proposalId", limit=64)
    cid = str_field(obj, "credentialId", limit=MAX_ID_LEN)
    decision = obj.get("decision")
    iat = int_field(obj, "iat")
    if decision not in DECISIONS:
        raise Refused("malformed", "decision must be approved or declined")
    if not me or target != me:
        raise Refused("response-not-for-me", f"the response is for {target[:120]}, not {me}")
    _signed_by(obj, sender, "the target's")
    _iat(iat, now)
    return Response(sender, target, pid, cid, "approved" if decision == "approved"
                    else "declined", iat, MappingProxyType(dict(obj)))


def _signed_by(obj: Mapping[str, Any], did: str, whose: str, *,
               keep: tuple[str, ...] = ()) -> None:
    """``obj``'s ``sig`` verifies under ``did``, else ``bad-signature`` naming ``whose``
    signature; a refusal whose code is in ``keep`` is raised as it is."""
    try:
        verify_object(obj, did)
    except Refused as exc:
        if exc.code in keep:
            raise
        raise Refused("bad-signature", f"{whose} signature does not verify "
                                       f"({exc.code}: {exc.detail})") from None


# -- revocation lists ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RevocationList:
    """An issuer's signed list of the introductions it revoked, verified under the issuer
    the caller named. Built only by ``verify_revocations``."""

    issuer: str
    revoked: frozenset[str]
    iat: int
    doc: Mapping[str, Any]


def mint_revocations(key: SigningKey, revoked: Sequence[str], *, now: int) -> dict[str, Any]:
    ids = sorted(set(revoked))
    if len(ids) > MAX_REVOKED:
        raise Refused("too-many-revoked", f"a revocation list holds at most {MAX_REVOKED} ids")
    return sign_object(key, {"typ": REVOCATIONS_TYP, "issuer": key.did, "revoked": ids,
                             "iat": now})


def verify_revocations(obj: object, *, issuer: str, now: int) -> RevocationList:
    """``issuer``'s revocation list, or ``Refused``: ``malformed``, ``wrong-typ``,
    ``list-of-another-issuer``, ``bad-signature``, ``issued-in-future``. The ids are
    strictly ascending (one spelling per list), at most ``MAX_REVOKED``."""
    if not isinstance(obj, Mapping):
        raise Refused("malformed", "a revocation list is a JSON object")
    if obj.get("typ") != REVOCATIONS_TYP:
        raise Refused("wrong-typ", f"typ must be {REVOCATIONS_TYP!r}")
    named = str_field(obj, "issuer", limit=512)
    iat = int_field(obj, "iat")
    ids = obj.get("revoked")
    if not isinstance(ids, list) or len(ids) > MAX_REVOKED or not all(
            isinstance(i, str) and 0 < len(i) <= MAX_ID_LEN for i in ids):
        raise Refused("malformed", f"revoked is a list of at most {MAX_REVOKED} ids")
    if any(a >= b for a, b in itertools.pairwise(ids)):
        raise Refused("malformed", "revoked ids must be sorted and unique")
    if not issuer or named != issuer:
        raise Refused("list-of-another-issuer", f"the list is {named[:120]}'s, not {issuer}'s")
    _signed_by(obj, named, "the issuer's")
    if iat > now + CLOCK_SKEW:
        raise Refused("issued-in-future", f"iat is {iat - now} s in the future")
    return RevocationList(named, frozenset(ids), iat, MappingProxyType(dict(obj)))
