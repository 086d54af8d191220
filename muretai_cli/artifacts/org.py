"""Signed org memberships: an organisation's DID vouching that an agent's DID is a member.

    {"typ": "muretai/org-membership/1", "orgDid", "agentDid", "orgName", "role"?,
     "iat", "exp"?, "sig"}   -- signed by orgDid
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from muretai_cli.artifacts._signed import (
    int_field,
    require_int,
    require_str,
    sign_object,
    str_field,
    verify_object,
)
from muretai_cli.errors import Refused
from muretai_cli.seam import ARTIFACT_IAT_SKEW, SigningKey

ORG_TYP = "muretai/org-membership/1"


def attest_member(org_key: SigningKey, *, member_did: str, org_name: str, now: int,
                  role: str | None = None, ttl: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"typ": ORG_TYP, "orgDid": org_key.did, "agentDid": member_did,
                            "orgName": org_name, "iat": now}
    if role is not None:
        body["role"] = role
    if ttl is not None:
        body["exp"] = now + ttl
    return sign_object(org_key, body)


@dataclass(frozen=True, slots=True)
class Membership:
    """An org membership whose signature verified under ``org_did`` for the agent the caller
    named, unexpired when checked. Built only by ``check_membership``; ``org_name`` is what
    the org *claims* (a trust list says whether it is that org). ``doc`` is the signed
    document as received (what a card publishes), read-only."""

    org_did: str
    agent_did: str
    org_name: str
    role: str | None
    iat: int
    exp: int | None
    doc: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dict(self.doc)


def check_membership(doc: object, *, agent_did: str, now: int) -> Membership:
    """Verify a membership for the agent the caller names; returns it or raises ``Refused``."""
    if not isinstance(doc, dict):
        raise Refused("malformed-membership", "a membership is a JSON object")
    if doc.get("typ") != ORG_TYP:
        raise Refused("wrong-typ", f"typ must be {ORG_TYP!r}")
    org_did = str_field(doc, "orgDid", code="malformed-membership")
    member = str_field(doc, "agentDid", code="malformed-membership")
    org_name = str_field(doc, "orgName", code="malformed-membership", limit=200)
    role = require_str(doc, "role", code="malformed-membership", optional=True, limit=200)
    iat = int_field(doc, "iat", code="malformed-membership")
    exp = require_int(doc, "exp", code="malformed-membership", optional=True)
    if not isinstance(agent_did, str) or not agent_did:
        raise Refused("membership-for-other-agent", "the verifier was given no agent DID")
    if member != agent_did:
        raise Refused("membership-for-other-agent", f"the membership names {member}, "
                                                    f"not {agent_did}")
    verify_object(doc, org_did)
    if iat > now + ARTIFACT_IAT_SKEW:
        raise Refused("issued-in-future", f"iat is {iat - now} s in the future")
    if exp is not None and exp <= now:
        raise Refused("expired", f"the membership expired {now - exp} s ago")
    return Membership(org_did, member, org_name, role, iat, exp, MappingProxyType(dict(doc)))
