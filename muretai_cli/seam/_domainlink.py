"""Domain linkage (seam §7): the DIF Domain Linkage Credential as a compact EdDSA JWS.

What it proves, and in which direction: the holder of a DID *claims* a domain. It becomes
evidence only when the document is served from that domain's
``/.well-known/did-configuration.json`` and the DID's card names the domain back; both of
those are the caller's (``site/``, ``visit/``), not this module's.

The signature covers the TEXT of the first two segments, so verification splits the token
and never re-serialises what it decoded. Segments are unpadded base64url with one spelling.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam._b64 import (
    b64decode_strict,
    b64encode,
    b64url_decode_strict,
    b64url_encode,
)
from muretai_cli.seam._canonical import parse_document
from muretai_cli.seam._ed25519 import SigningKey
from muretai_cli.seam._limits import MAX_LINKED_DIDS, MAX_SAME_ISSUER, MAX_TOKEN_CHARS

DID_CONFIGURATION_PATH = "/.well-known/did-configuration.json"
CONTEXT_VC = "https://www.w3.org/2018/credentials/v1"
CONTEXT_DID_CONFIGURATION = "https://identity.foundation/.well-known/did-configuration/v1"
JWS_ALG = "EdDSA"
_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
_DOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})+(?::(?:[1-9][0-9]{{0,4}}))?")


@dataclass(frozen=True, slots=True)
class DomainLink:
    """A verified credential: ``did`` claims ``origin`` from ``nbf`` until ``exp``."""

    did: str
    origin: str
    nbf: int
    exp: int

    def to_json(self) -> dict[str, Any]:
        return {"did": self.did, "origin": self.origin, "nbf": self.nbf, "exp": self.exp}


def check_domain(domain: object) -> str:
    """A bare lowercase LDH host with at least two labels and an optional ``:port``, or refuse.

    No scheme, path, userinfo or trailing dot, and no case folding: the domain a person typed
    and the one a credential names must be visibly the same string.
    """
    if not isinstance(domain, str) or len(domain) > 259 or not _DOMAIN.fullmatch(domain):
        raise Refused("bad-domain", f"{str(domain)[:100]!r} is not a bare lowercase domain "
                                    "(a-z 0-9 -, two labels or more, optional :port); write an "
                                    "internationalised name in punycode")
    host, _, port = domain.partition(":")
    if len(host) > 253 or (port and not 1 <= int(port) <= 65535):
        raise Refused("bad-domain", f"{domain[:100]!r}: host too long or port out of range")
    return domain


def origin_for(domain: str) -> str:
    """The https origin a credential for ``domain`` names (https only: plaintext proves nothing)."""
    return "https://" + check_domain(domain)


def canonical_origin(text: object) -> str | None:
    """``https://host[:port]`` with the host lowercased and port 443 dropped, or None.

    A path of ``/`` is tolerated (it names the same origin); anything else is not an origin.
    """
    if not isinstance(text, str) or len(text) > 300:
        return None
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if parts.scheme.lower() != "https" or not host or "@" in parts.netloc \
            or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return "https://" + host + (f":{port}" if port not in (None, 443) else "")


def kid_for(did: str) -> str:
    """The did:key verification method id: ``<did>#<multibase key>``."""
    return f"{did}#{did.rsplit(':', 1)[-1]}"


def _iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _segment(value: dict[str, Any]) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return b64url_encode(text.encode("utf-8"))


def _int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused("malformed-credential", f"{name} must be an integer epoch second, not "
                                              f"{type(value).__name__}")
    return value


def domain_linkage_signing_input(did: str, domain: str, *, nbf: int, exp: int) -> bytes:
    """The exact bytes a Domain Linkage Credential's signature covers: header.payload."""
    nbf, exp = _int(nbf, "nbf"), _int(exp, "exp")
    if exp <= nbf:
        raise Refused("malformed-credential", "exp must be after nbf")
    origin = origin_for(domain)
    header = {"alg": JWS_ALG, "kid": kid_for(did), "typ": "JWT"}
    payload = {
        "exp": exp, "iss": did, "nbf": nbf, "sub": did,
        "vc": {
            "@context": [CONTEXT_VC, CONTEXT_DID_CONFIGURATION],
            "credentialSubject": {"id": did, "origin": origin},
            "expirationDate": _iso(exp),
            "issuanceDate": _iso(nbf),
            "issuer": did,
            "type": ["VerifiableCredential", "DomainLinkageCredential"],
        },
    }
    return f"{_segment(header)}.{_segment(payload)}".encode("ascii")


def sign_domain_linkage(key: SigningKey, domain: str, *, nbf: int, exp: int) -> str:
    """Mint the compact JWS saying ``key``'s DID speaks for ``domain`` from nbf to exp."""
    signing_input = domain_linkage_signing_input(key.did, domain, nbf=nbf, exp=exp)
    raw = b64decode_strict(key.sign(signing_input))
    return signing_input.decode("ascii") + "." + b64url_encode(raw)


def did_configuration(tokens: list[str]) -> dict[str, Any]:
    """The document served at ``/.well-known/did-configuration.json``."""
    if not 1 <= len(tokens) <= MAX_LINKED_DIDS:
        raise Refused("malformed-configuration", f"1 to {MAX_LINKED_DIDS} credentials")
    return {"@context": CONTEXT_DID_CONFIGURATION, "linked_dids": list(tokens)}


def _split(token: object) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    """(header, payload, signing input, signature): decoded, NOT verified."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
        raise Refused("malformed-credential", "a credential is a compact JWS string of at "
                                              f"most {MAX_TOKEN_CHARS} characters")
    parts = token.split(".")
    if len(parts) != 3:
        raise Refused("malformed-credential", f"a compact JWS has 3 segments, this has "
                                              f"{len(parts)}")
    decoded: list[Any] = []
    for name, part in zip(("header", "payload"), parts[:2], strict=True):
        raw = b64url_decode_strict(part, code="not-canonical-base64url")
        try:
            value = parse_document(raw)
        except MuretaiError as exc:  # the one parse boundary: too deep is a reason, too
            raise Refused("malformed-credential",
                          f"the {name} is not UTF-8 JSON ({exc.code})") from None
        if not isinstance(value, dict):
            raise Refused("malformed-credential", f"the {name} is not a JSON object")
        decoded.append(value)
    sig = b64url_decode_strict(parts[2], code="not-canonical-base64url")
    return decoded[0], decoded[1], f"{parts[0]}.{parts[1]}".encode("ascii"), sig


def unverified_issuer(token: object) -> str | None:
    """The ``iss`` a token names, read WITHOUT verifying (to pick which one to verify)."""
    try:
        iss = _split(token)[1].get("iss")
    except MuretaiError:
        return None
    return iss if isinstance(iss, str) else None


def verify_domain_linkage(token: object, *, domain: str, did: str, now: int) -> DomainLink:
    """Verify one credential for ``domain`` and ``did`` (both the caller's), at ``now``.

    Refuses: malformed or non-canonical segments, ``alg`` other than EdDSA, an issuer other
    than ``did``, a bad signature, ``iss``/``sub``/``credentialSubject.id`` not one string,
    the VC type or contexts missing (as lists), an origin other than https://``domain``
    (ports count), non-integer ``nbf``/``exp``, a missing ``exp``, and ``now`` outside them.
    """
    from muretai_cli.seam._ed25519 import verify_signature

    expected_origin = origin_for(domain)
    header, payload, signing_input, sig = _split(token)
    if header.get("alg") != JWS_ALG:
        raise Refused("bad-alg", f"alg must be {JWS_ALG!r}, not {str(header.get('alg'))[:40]!r}")
    if payload.get("iss") != did:
        raise Refused("did-mismatch", f"the credential is issued by "
                                      f"{str(payload.get('iss'))[:120]}, not {did}")
    if len(sig) != 64:
        raise Refused("bad-signature-length", f"an Ed25519 signature is 64 bytes, not {len(sig)}")
    verify_signature(did, signing_input, b64encode(sig))
    vc = payload.get("vc")
    if not isinstance(vc, dict):
        raise Refused("not-domain-linkage", "vc must be an object")
    subject = vc.get("credentialSubject")
    if payload.get("sub") != did or not isinstance(subject, dict) or subject.get("id") != did:
        raise Refused("subject-mismatch", "iss, sub and vc.credentialSubject.id must be the "
                                          "same DID")
    types, contexts = vc.get("type"), vc.get("@context")
    if not isinstance(types, list) or "DomainLinkageCredential" not in types:
        raise Refused("not-domain-linkage", "vc.type must be a list holding "
                                            "DomainLinkageCredential")
    if not isinstance(contexts, list) or CONTEXT_VC not in contexts \
            or CONTEXT_DID_CONFIGURATION not in contexts:
        raise Refused("not-domain-linkage", "vc.@context must be a list holding both the VC "
                                            "and the DID-configuration contexts")
    claimed = canonical_origin(subject.get("origin"))
    if claimed != expected_origin:
        raise Refused("origin-mismatch", f"the credential names "
                                         f"{str(subject.get('origin'))[:120]!r}, not "
                                         f"{expected_origin} (ports count)")
    if "exp" not in payload:
        raise Refused("missing-exp", "exp is mandatory: a domain is leased, not owned")
    nbf, exp = _int(payload.get("nbf"), "nbf"), _int(payload["exp"], "exp")
    if now < nbf:
        raise Refused("not-yet-valid", f"valid from {nbf}, it is {now}")
    if now > exp:
        raise Refused("expired", f"expired at {exp}, it is {now}")
    return DomainLink(did, expected_origin, nbf, exp)


def linked_did(doc: object, *, domain: str, did: str, now: int) -> DomainLink:
    """The credential in a fetched did-configuration document that links ``did`` to ``domain``.

    Entries naming another issuer are skipped unverified (cheap), at most MAX_SAME_ISSUER
    naming ``did`` are verified. Refuses with the last reason when none verifies.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("linked_dids"), list):
        raise Refused("malformed-configuration", "a DID configuration is an object with a "
                                                 "linked_dids list")
    last: MuretaiError = Refused("not-linked", f"no credential in the document names {did}")
    tried = 0
    for token in doc["linked_dids"][:MAX_LINKED_DIDS]:
        if unverified_issuer(token) != did:
            continue
        if tried >= MAX_SAME_ISSUER:
            break
        tried += 1
        try:
            return verify_domain_linkage(token, domain=domain, did=did, now=now)
        except MuretaiError as exc:
            last = exc
    raise Refused(last.code, last.detail)
