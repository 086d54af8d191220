"""The public AgentIntroduction recipe, written out from the reference's description with
nothing of ours (plain json, base64, base58 and cryptography), and the test parties: the
introduction tests on both sides of the CLI build their credentials here."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import base58
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from muretai_cli.seam import SigningKey

NOW = 1_800_000_000
ALICE = SigningKey(bytes(range(32)))  # the introducer
CAROL = SigningKey(bytes(range(1, 33)))  # the subject
BOB = SigningKey(bytes(range(2, 34)))  # the recipient
MALLORY = SigningKey(bytes(range(3, 35)))
DAY = 86400


# -- the public recipe, written from its description (not ours) ---------------------------

def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def recipe_did(seed: bytes) -> str:
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key() \
        .public_bytes(Encoding.Raw, PublicFormat.Raw)
    return "did:key:z" + base58.b58encode(b"\xed\x01" + public).decode()


def _sign(seed: bytes, payload: bytes) -> str:
    return base64.b64encode(Ed25519PrivateKey.from_private_bytes(seed).sign(payload)).decode()


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def recipe_request(seed: bytes, introducer: str, target: str, ts: int) -> dict[str, Any]:
    six = {"from": recipe_did(seed), "to": introducer, "messageId": uuid.uuid4().hex,
           "contextId": None, "timestamp": ts, "text": "introduce-me-to:" + target}
    return {**six, "sig": _sign(seed, _canonical(six))}


def recipe_credential(issuer_seed: bytes, subject: str, to: str, *, issued: int,
                      request: dict[str, Any] | None, valid: int = 30 * DAY,
                      trust: Any = 873, mode: str | None = None,
                      endpoint: str | None = None) -> dict[str, Any]:
    """As the reference mints: body, `provenance`, optional issuerEndpoint, then proof over
    the canonical bytes of everything but proof, the jws standard padded base64."""
    issuer = recipe_did(issuer_seed)
    prov: dict[str, Any] = ({"mode": "requested", "request": request} if request is not None
                            else {"mode": "proactive"})
    if mode is not None:
        prov["mode"] = mode
    vc: dict[str, Any] = {
        "id": "urn:uuid:" + uuid.uuid4().hex,
        "type": ["VerifiableCredential", "AgentIntroduction"],
        "issuer": issuer,
        "issuanceDate": _iso(issued),
        "credentialSubject": {"id": subject, "introducedTo": to, "expertise": ["rust"],
                              "trustLevelBp": trust, "validUntil": _iso(issued + valid)},
        "provenance": prov,
    }
    if endpoint:
        vc["issuerEndpoint"] = endpoint
    return resign(vc, issuer_seed)


def resign(vc: dict[str, Any], seed: bytes) -> dict[str, Any]:
    body = {k: v for k, v in vc.items() if k != "proof"}
    body["proof"] = {"type": "Ed25519Signature2020", "created": body["issuanceDate"],
                     "verificationMethod": recipe_did(seed), "jws": _sign(seed, _canonical(body))}
    return body


def recipe_accepts(vc: dict[str, Any], subject: str, recipient: str, now: int) -> bool:
    """The public verifier's checks, from its description: type, issuer signature over the
    body without proof, subject, recipient, validUntil in the future, and a requested
    provenance's request signed by the subject, to the issuer, live at issuanceDate."""
    body = {k: v for k, v in vc.items() if k != "proof"}
    key = Ed25519PublicKey.from_public_bytes(base58.b58decode(vc["issuer"][9:])[2:])
    try:
        key.verify(base64.b64decode(vc["proof"]["jws"]), _canonical(body))
    except InvalidSignature:
        return False
    claims = vc["credentialSubject"]
    if (claims["id"], claims["introducedTo"]) != (subject, recipient):
        return False
    if datetime.fromisoformat(claims["validUntil"]).timestamp() <= now:
        return False
    prov = vc["provenance"]
    if prov["mode"] == "requested":
        req = prov["request"]
        six = {k: req[k] for k in ("from", "to", "messageId", "contextId", "timestamp", "text")}
        rkey = Ed25519PublicKey.from_public_bytes(base58.b58decode(req["from"][9:])[2:])
        try:
            rkey.verify(base64.b64decode(req["sig"]), _canonical(six))
        except InvalidSignature:
            return False
        age = datetime.fromisoformat(vc["issuanceDate"]).timestamp() - req["timestamp"]
        named = req["text"].removeprefix("introduce-me-to:")
        return bool(req["from"] == subject and req["to"] == vc["issuer"] and -300 <= age <= 30 * DAY
                and named == recipient)
    return bool(prov["mode"] == "proactive")


def requested(**kw: Any) -> dict[str, Any]:
    request = recipe_request(CAROL.seed, ALICE.did, BOB.did, NOW - DAY)
    return recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW - 60, request=request,
                             **kw)
