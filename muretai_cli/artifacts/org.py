"""Signed org memberships: an organisation's DID vouching that an agent's DID is a member.

    {"typ": "muretai/org-membership/1", "orgDid", "agentDid", "orgName", "role"?,
     "iat", "exp"?, "sig"}   -- signed by orgDid
"""

from __future__ import annotations

from typing import Any

from muretai_cli.artifacts._signed import require_int, require_str, sign_object, verify_object
from muretai_cli.errors import Refused
from muretai_cli.seam import SigningKey

ORG_TYP = "muretai/org-membership/1"
MAX_IAT_SKEW = 300


def attest_member(org_key: SigningKey, *, member_did: str, org_name: str, now: int,
                  role: str | None = None, ttl: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"typ": ORG_TYP, "orgDid": org_key.did, "agentDid": member_did,
                            "orgName": org_name, "iat": now}
    if role is not None:
        body["role"] = role
    if ttl is not None:
        body["exp"] = now + ttl
    return sign_object(org_key, body)


def check_membership(doc: object, *, agent_did: str, now: int) -> dict[str, Any]:
    """Verify a membership for the agent the caller names; returns it or raises ``Refused``."""
    if not isinstance(doc, dict):
        raise Refused("malformed-membership", "a membership is a JSON object")
    if doc.get("typ") != ORG_TYP:
        raise Refused("wrong-typ", f"typ must be {ORG_TYP!r}")
    org_did = require_str(doc, "orgDid", code="malformed-membership")
    member = require_str(doc, "agentDid", code="malformed-membership")
    require_str(doc, "orgName", code="malformed-membership", limit=200)
    require_str(doc, "role", code="malformed-membership", optional=True, limit=200)
    iat = require_int(doc, "iat", code="malformed-membership")
    exp = require_int(doc, "exp", code="malformed-membership", optional=True)
    assert org_did is not None and iat is not None
    if not isinstance(agent_did, str) or not agent_did:
        raise Refused("membership-for-other-agent", "the verifier was given no agent DID")
    if member != agent_did:
        raise Refused("membership-for-other-agent", f"the membership names {member}, "
                                                    f"not {agent_did}")
    verify_object(doc, org_did)
    if iat > now + MAX_IAT_SKEW:
        raise Refused("issued-in-future", f"iat is {iat - now} s in the future")
    if exp is not None and exp <= now:
        raise Refused("expired", f"the membership expired {now - exp} s ago")
    return dict(doc)
