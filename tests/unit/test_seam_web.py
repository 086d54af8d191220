"""Domain linkage (seam §7) and Web Bot Auth (seam §8): the vectors, and one refusal per rule."""

from __future__ import annotations

import json
from typing import Any

import pytest

from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam import (
    SigningKey,
    b64decode_strict,
    did_configuration,
    domain_linkage_signing_input,
    jwk_from_public,
    linked_did,
    sign_directory,
    sign_domain_linkage,
    sign_request,
    signature_agent_url,
    verify_directory,
    verify_domain_linkage,
    verify_request,
)
from muretai_cli.seam._b64 import b64url_encode
from tests.repo_files import cases, load_vectors

KEY = SigningKey(bytes(range(32)))
THIEF = SigningKey(bytes(range(64, 96)))
NOW = 1_800_000_000


@pytest.fixture(scope="module")
def wba() -> dict[str, Any]:
    return load_vectors("wba_vectors.json")


def test_wba_vectors_accept(wba: dict[str, Any]) -> None:
    assert len(wba["accept"]) == 5
    for case in wba["accept"]:
        did = verify_request(case["headers"], authority=wba["authority"], jwks=wba["jwks"],
                             now=wba["now"])
        assert did == case["expect_did"], case["name"]


def test_wba_vectors_reject(wba: dict[str, Any]) -> None:
    assert len(wba["reject"]) == 25
    for case in wba["reject"]:
        with pytest.raises(MuretaiError):
            verify_request(case["headers"], authority=wba["authority"], jwks=wba["jwks"],
                           now=wba["now"])
            pytest.fail(case["name"])


def test_domain_linkage_vectors(wire_vectors: dict[str, Any]) -> None:
    for c in cases(wire_vectors["domainLinkage"], "domainLinkage"):
        assert domain_linkage_signing_input(c["did"], c["domain"], nbf=c["nbf"], exp=c["exp"]) \
            == c["signingInput"].encode()
        link = verify_domain_linkage(c["token"], domain=c["domain"], did=c["did"], now=c["nbf"])
        assert (link.did, link.origin) == (c["did"], "https://" + c["domain"])


def test_web_bot_auth_vectors_reproduced_from_the_seed(wire_vectors: dict[str, Any]) -> None:
    group = wire_vectors["webBotAuth"]
    r = group["request"]
    headers = sign_request(KEY, f"https://{r['authority']}/rpc",
                           signature_agent=r["signatureAgentUrl"], created=r["created"])
    assert headers == {"Signature-Input": r["signatureInput"], "Signature": r["signature"],
                       "Signature-Agent": r["signatureAgent"]}
    d = group["directory"]
    body, dir_headers = sign_directory(KEY, d["authority"], created=d["created"])
    assert body == d["body"].encode() and dir_headers["Signature"] == d["signature"]


def _token(key: SigningKey, payload: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    head = header or {"alg": "EdDSA", "kid": f"{key.did}#x", "typ": "JWT"}
    text = ".".join(b64url_encode(json.dumps(p, sort_keys=True).encode()) for p in (head, payload))
    return text + "." + b64url_encode(b64decode_strict(key.sign(text.encode())))


def _payload(did: str, origin: str = "https://example.com", **changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "iss": did, "sub": did, "nbf": NOW - 10, "exp": NOW + 10,
        "vc": {"@context": ["https://www.w3.org/2018/credentials/v1",
                            "https://identity.foundation/.well-known/did-configuration/v1"],
               "type": ["VerifiableCredential", "DomainLinkageCredential"],
               "credentialSubject": {"id": did, "origin": origin}}}
    payload.update(changes)
    return payload


def _code(token: str, *, domain: str = "example.com", did: str = KEY.did, now: int = NOW) -> str:
    with pytest.raises(Refused) as err:
        verify_domain_linkage(token, domain=domain, did=did, now=now)
    return err.value.code


def test_domain_linkage_round_trip_and_one_refusal_per_rule() -> None:
    good = sign_domain_linkage(KEY, "example.com", nbf=NOW - 10, exp=NOW + 10)
    assert verify_domain_linkage(good, domain="example.com", did=KEY.did, now=NOW).exp == NOW + 10
    assert verify_domain_linkage(_token(KEY, _payload(KEY.did)), domain="example.com",
                                 did=KEY.did, now=NOW).did == KEY.did  # the helper is honest
    head, body, sig = good.split(".")
    assert _code(f"{head}=.{body}.{sig}") == "not-canonical-base64url"  # padded
    std = sig.replace("-", "+").replace("_", "/")
    if std != sig:
        assert _code(f"{head}.{body}.{std}") == "not-canonical-base64url"
    assert _code(good, domain="example.com:8443") == "origin-mismatch"  # ports count
    assert _code(good, domain="example.org") == "origin-mismatch"
    assert _code(good, now=NOW + 11) == "expired"
    assert _code(good, now=NOW - 11) == "not-yet-valid"
    assert _code(good, did=THIEF.did) == "did-mismatch"
    no_exp = _payload(KEY.did)
    del no_exp["exp"]
    assert _code(_token(KEY, no_exp)) == "missing-exp"
    assert _code(_token(KEY, _payload(KEY.did, sub=THIEF.did))) == "subject-mismatch"
    assert _code(_token(KEY, _payload(KEY.did, nbf=float(NOW)))) == "malformed-credential"
    stringly = _payload(KEY.did)
    stringly["vc"]["type"] = "DomainLinkageCredential"
    assert _code(_token(KEY, stringly)) == "not-domain-linkage"
    assert _code(_token(KEY, _payload(KEY.did), {"alg": "none"})) == "bad-alg"
    assert _code(_token(THIEF, _payload(KEY.did))) == "bad-signature"  # signed by another key
    assert _code(_token(KEY, _payload(KEY.did, "http://example.com"))) == "origin-mismatch"


def test_did_configuration_finds_the_one_credential_for_the_did() -> None:
    mine = sign_domain_linkage(KEY, "example.com", nbf=NOW - 10, exp=NOW + 10)
    theirs = sign_domain_linkage(THIEF, "example.com", nbf=NOW - 10, exp=NOW + 10)
    doc = did_configuration([theirs, "junk", mine])
    assert linked_did(doc, domain="example.com", did=KEY.did, now=NOW).did == KEY.did
    with pytest.raises(Refused, match="not-linked"):
        linked_did(did_configuration([theirs]), domain="example.com", did=KEY.did, now=NOW)
    with pytest.raises(Refused, match="expired"):
        linked_did(doc, domain="example.com", did=KEY.did, now=NOW + 100)


def test_request_signing_round_trip_and_refusals() -> None:
    jwks = {"keys": [jwk_from_public(KEY.public_bytes)]}
    headers = sign_request(KEY, "https://Shop.Example:443/rpc",
                           signature_agent="https://agent.example/door", created=NOW)
    assert verify_request(headers, authority="shop.example", jwks=jwks, now=NOW + 1) == KEY.did
    lowered = {k.lower(): v for k, v in headers.items()}
    assert verify_request(lowered, authority="shop.example", jwks=jwks, now=NOW) == KEY.did
    assert signature_agent_url(headers) == "https://agent.example/door"
    for authority, keys, now, code in (
            ("other.example", jwks, NOW, "bad-signature"),
            ("shop.example", jwks, NOW + 300, "wba-expired"),
            ("shop.example", {"keys": [jwk_from_public(THIEF.public_bytes)]}, NOW,
             "wba-unknown-key")):
        with pytest.raises(Refused) as err:
            verify_request(headers, authority=authority, jwks=keys, now=now)
        assert err.value.code == code


def test_a_copied_key_directory_proves_nothing() -> None:
    body, headers = sign_directory(KEY, "door.example", created=NOW)
    assert verify_directory(headers, body, authority="door.example", now=NOW) == [KEY.did]
    with pytest.raises(Refused):  # the same response served by another origin
        verify_directory(headers, body, authority="evil.example", now=NOW)
    _, thief_headers = sign_directory(THIEF, "evil.example", created=NOW)
    with pytest.raises(Refused):  # our public key, signed for by the thief
        verify_directory(thief_headers, body, authority="evil.example", now=NOW)
    with pytest.raises(Refused, match="wba-bad-directory"):
        verify_directory({**headers, "Content-Type": "text/html"}, body,
                         authority="door.example", now=NOW)
    with pytest.raises(Refused, match="wba-unsigned"):
        verify_directory({"Content-Type": headers["Content-Type"]}, body,
                         authority="door.example", now=NOW)
