"""Conformance runners for the web-identity groups: ``domainLinkage``, ``webBotAuth`` and the
two halves of ``wba_vectors.json`` (``webBotAuth.accept``, ``webBotAuth.reject``).

Each positive case also carries a refusal made from it by changing one thing, so a verifier
that checks nothing cannot pass the group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from muretai_cli.errors import MuretaiError
from muretai_cli.seam import (
    SigningKey,
    domain_linkage_signing_input,
    jwk_from_public,
    jwk_thumbprint,
    sign_directory,
    sign_request,
    verify_directory,
    verify_domain_linkage,
    verify_request,
)

Cases = list[tuple[str, bool]]


def _refused(fn: Callable[[], object]) -> bool:
    try:
        fn()
    except MuretaiError:
        return True
    return False


def _holds(fn: Callable[[], object], expected: object) -> bool:
    try:
        return fn() == expected
    except MuretaiError:
        return False


def _other_port(domain: str) -> str:
    host, _, port = domain.partition(":")
    return f"{host}:{int(port) + 1}" if port else f"{host}:8443"


def _domain_case(c: dict[str, Any]) -> dict[str, bool]:
    token, did, domain, nbf, exp = c["token"], c["did"], c["domain"], c["nbf"], c["exp"]
    head, body, sig = token.split(".")
    return {
        "signing input": _holds(lambda: domain_linkage_signing_input(
            did, domain, nbf=nbf, exp=exp), c["signingInput"].encode()),
        "verifies": _holds(lambda: verify_domain_linkage(
            token, domain=domain, did=did, now=nbf).did, did),
        "other port refused": _refused(lambda: verify_domain_linkage(
            token, domain=_other_port(domain), did=did, now=nbf)),
        "after exp refused": _refused(lambda: verify_domain_linkage(
            token, domain=domain, did=did, now=exp + 1)),
        "padded segment refused": _refused(lambda: verify_domain_linkage(
            f"{head}.{body}.{sig}==", domain=domain, did=did, now=nbf)),
        "standard alphabet refused": _refused(lambda: verify_domain_linkage(
            f"{head}.{body}.{sig.replace('_', '/').replace('-', '+')}", domain=domain,
            did=did, now=nbf)) if ("_" in sig or "-" in sig) else True,
        "another DID refused": _refused(lambda: verify_domain_linkage(
            token, domain=domain, did=SigningKey(bytes(32)).did, now=nbf)),
    }


def domain_linkage(doc: dict[str, Any]) -> Cases:
    out: Cases = []
    for c in doc["domainLinkage"]:
        checks = _domain_case(c)
        out.extend((f"{c['name']}: {what}", ok) for what, ok in checks.items())
    return out


def web_bot_auth(doc: dict[str, Any]) -> Cases:
    group = doc["webBotAuth"]
    out: Cases = []
    for k in group["keys"]:
        public = bytes.fromhex(k["publicHex"])
        out.append((f"thumbprint {k['did'][-8:]}", jwk_thumbprint(public) == k["thumbprint"]
                    and jwk_from_public(public)["x"] == k["x"]))
    key = SigningKey(bytes.fromhex(group["seedHex"]))
    out.append(("seed -> did", key.did == group["did"]))
    jwks = {"keys": [jwk_from_public(key.public_bytes)]}
    r = group["request"]
    headers = sign_request(key, f"https://{r['authority']}/", signature_agent=r[
        "signatureAgentUrl"], created=r["created"], window=r["expires"] - r["created"])
    out.append(("request: Signature-Input, Signature, Signature-Agent", headers == {
        "Signature-Input": r["signatureInput"], "Signature": r["signature"],
        "Signature-Agent": r["signatureAgent"]}))
    out.append(("request verifies", _holds(lambda: verify_request(
        headers, authority=r["authority"], jwks=jwks, now=r["created"]), key.did)))
    out.append(("request at another authority refused", _refused(lambda: verify_request(
        headers, authority="other." + r["authority"], jwks=jwks, now=r["created"]))))
    d = group["directory"]
    body, dir_headers = sign_directory(key, d["authority"], created=d["created"],
                                       window=d["expires"] - d["created"])
    out.append(("directory: body and signature", body == d["body"].encode()
                and dir_headers["Signature-Input"] == d["signatureInput"]
                and dir_headers["Signature"] == d["signature"]
                and dir_headers["Content-Type"] == d["contentType"]))
    out.append(("directory verifies", _holds(lambda: verify_directory(
        dir_headers, body, authority=d["authority"], now=d["created"]), [key.did])))
    out.append(("directory for another authority refused", _refused(lambda: verify_directory(
        dir_headers, body, authority="other." + d["authority"], now=d["created"]))))
    return out


def _wba_case(doc: dict[str, Any], case: dict[str, Any]) -> Callable[[], str]:
    return lambda: verify_request(case["headers"], authority=doc["authority"],
                                  jwks=doc["jwks"], now=doc["now"])


def wba_accept(doc: dict[str, Any]) -> Cases:
    return [(c["name"], _holds(_wba_case(doc, c), c["expect_did"])) for c in doc["accept"]]


def wba_reject(doc: dict[str, Any]) -> Cases:
    return [(c["name"], _refused(_wba_case(doc, c))) for c in doc["reject"]]


RUNNERS: dict[str, Callable[[dict[str, Any]], Cases]] = {
    "domainLinkage": domain_linkage,
    "webBotAuth": web_bot_auth,
    "webBotAuth.accept": wba_accept,
    "webBotAuth.reject": wba_reject,
}


def is_wba_file(doc: dict[str, Any]) -> bool:
    """``wba_vectors.json``: top-level accept/reject lists judged under one jwks."""
    return isinstance(doc.get("accept"), list) and isinstance(doc.get("reject"), list) \
        and "jwks" in doc
