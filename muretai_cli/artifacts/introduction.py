"""Introductions: an issuer's signed vouch that a subject may reach one recipient.

The wire is public (muretai/agent-seam, ``AgentIntroduction``; see docs/trust.md):

    {"id": "urn:uuid:…", "type": ["VerifiableCredential", "AgentIntroduction"],
     "issuer": <did:key>, "issuanceDate": <ISO 8601 UTC>,
     "credentialSubject": {"id": <subject>, "introducedTo": <recipient>,
                           "expertise": [str…], "trustLevelBp": <int 0..1000>,
                           "validUntil": <ISO 8601 UTC>},
     "provenance": {"mode": "requested", "request": <the subject's signed request>}
                 | {"mode": "proactive"},
     "issuerEndpoint"?: <url>,
     "proof": {"type": "Ed25519Signature2020", "created": <ISO 8601>,
               "verificationMethod": <issuer>, "jws": <base64 of the 64-byte signature>}}

The signed bytes are the canonical bytes of the credential without ``proof``, under the key
``issuer`` names. The request is an ordinary six-field message from the subject to the
issuer whose ``text`` is ``introduce-me-to:`` + the target DID; it must have been live
(``INTRO_REQUEST_WINDOW``) at the credential's ``issuanceDate``.

``verify_introduction`` takes the subject and the recipient from its caller, never from the
credential, and returns an ``Introduction`` or raises ``Refused`` with a named reason.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeGuard

from muretai_cli.artifacts._intro_values import (
    BP_SCALE,
    DEFAULT_VALIDITY,
    INTRODUCTION_TYPE,
    MAX_EXPERTISE,
    MAX_EXPERTISE_CHARS,
    MAX_URL_CHARS,
    MODE_PROACTIVE,
    MODE_REQUESTED,
    PROACTIVE,
    PROOF_TYPE,
    Introduction,
    IntroductionRequest,
    Mode,
    Provenance,
    Revoked,
    iso_seconds,
    iso_utc,
    parse_iso,
    proven_introduction,
    proven_request,
    proven_requested,
    trust_bp,
)
from muretai_cli.artifacts._wording import REQUEST_PREFIX
from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam import (
    CLOCK_SKEW,
    INTRO_REQUEST_WINDOW,
    MAX_ID_LEN,
    MAX_SAFE_INT,
    SigningKey,
    canonical_bytes,
    check_signed_fields,
    public_from_did,
    sign_envelope,
    six_fields,
    timestamp_seconds,
    verifying_key_from_did,
)
from muretai_cli.seam._ed25519 import verify_strict

__all__ = ["BP_SCALE", "DEFAULT_VALIDITY", "INTRODUCTION_TYPE", "MAX_EXPERTISE",
           "MAX_EXPERTISE_CHARS", "MAX_URL_CHARS", "MODE_PROACTIVE", "MODE_REQUESTED",
           "PROOF_TYPE", "Introduction", "IntroductionRequest", "Mode", "Provenance",
           "Revoked", "check_request", "iso_utc", "mint_introduction", "mint_request",
           "parse_iso", "request_text", "signed_digest", "signing_payload", "trust_bp",
           "verify_introduction"]

def request_text(target: str) -> str:
    """The signed text of "introduce me to ``target``"."""
    return REQUEST_PREFIX + target


def mint_request(key: SigningKey, *, introducer: str, target: str, now: int,
                 context_id: str | None = None) -> dict[str, Any]:
    """The subject's signed request: the six fields plus ``sig``, to ``introducer``."""
    public_from_did(introducer)
    public_from_did(target)
    return sign_envelope(key, to=introducer, text=request_text(target), timestamp=now,
                         context_id=context_id)


# -- minting ------------------------------------------------------------------------------

def signing_payload(credential: Mapping[str, Any]) -> bytes:
    """The signed bytes: canonical bytes of the credential without ``proof``."""
    return canonical_bytes({k: v for k, v in credential.items() if k != "proof"})


def mint_introduction(key: SigningKey, *, subject: str, to: str, now: int,
                      expertise: Sequence[str] = (), trust: int = BP_SCALE,
                      valid_for: int = DEFAULT_VALIDITY,
                      request: Mapping[str, Any] | None = None,
                      issuer_endpoint: str | None = None) -> dict[str, Any]:
    """A signed introduction of ``subject`` to ``to`` by ``key``: ``requested`` when
    ``request`` (the subject's signed ask) is given, else ``proactive``. A request that
    would not verify in the result is refused here, before anything is signed."""
    public_from_did(subject)
    public_from_did(to)
    if isinstance(trust, bool) or not isinstance(trust, int) or not 0 <= trust <= BP_SCALE:
        raise Refused("bad-trust", f"trust must be integer basis points 0..{BP_SCALE}")
    if valid_for < 1:
        raise Refused("bad-expiry", "an introduction must expire in the future")
    _check_expertise(list(expertise))
    if request is None:
        provenance: dict[str, Any] = {"mode": MODE_PROACTIVE}
    else:
        checked = check_request(request, subject=subject, introducer=key.did, anchor=now,
                                now=now)
        if checked.target is not None and checked.target != to:
            raise Refused("request-retargeted", f"the request asks for {checked.target}, "
                                                f"not {to}")
        provenance = {"mode": MODE_REQUESTED, "request": dict(request)}
    stamp = iso_utc(now)
    body: dict[str, Any] = {
        "id": "urn:uuid:" + uuid.uuid4().hex,
        "type": list(INTRODUCTION_TYPE),
        "issuer": key.did,
        "issuanceDate": stamp,
        "credentialSubject": {"id": subject, "introducedTo": to, "expertise": list(expertise),
                              "trustLevelBp": trust, "validUntil": iso_utc(now + valid_for)},
        "provenance": provenance,
    }
    if issuer_endpoint:
        body["issuerEndpoint"] = issuer_endpoint.rstrip("/")
    body["proof"] = {"type": PROOF_TYPE, "created": stamp, "verificationMethod": key.did,
                     "jws": key.sign(signing_payload(body))}
    return body


# -- verifying ----------------------------------------------------------------------------

def check_request(record: object, *, subject: str, introducer: str, anchor: float,
                  now: int, again: bool = False) -> IntroductionRequest:
    """Verify an embedded request: signed by ``subject`` (or the op key its attached
    KeyState delegates at ``now``), addressed to ``introducer``, live at ``anchor``.
    ``again``: its bytes and signature are ones that verified before (``verify_introduction``
    's ``verified``), so a request without a KeyState is not solved twice; one with a
    KeyState is verified in full (its delegation is judged at ``now``)."""
    from muretai_cli.artifacts.keystate import resolve_op_did

    if not isinstance(record, Mapping):
        raise Refused("bad-provenance", "the embedded request is not a JSON object")
    try:
        fields = six_fields(record)
        if not again or record.get("keystate") is not None:
            signer = resolve_op_did(fields["from"], record.get("keystate"), None,
                                    now=now).op_did
            check_signed_fields(fields, record.get("sig"), signer=signer)
    except MuretaiError as exc:
        raise _request_unsigned(exc) from None
    if fields["from"] != subject:
        raise Refused("bad-provenance", f"the embedded request is from {fields['from']}, "
                                        f"not from the subject {subject}")
    if fields["to"] != introducer:
        raise Refused("request-retargeted", f"the embedded request asks {fields['to']}, "
                                            f"not the issuer {introducer}")
    try:
        stamp = timestamp_seconds(fields["timestamp"])
    except Refused as exc:
        raise Refused("bad-provenance", f"the embedded request: {exc.detail}") from None
    age = anchor - stamp
    if age < -CLOCK_SKEW:
        raise Refused("request-stale", f"the request is dated {int(-age)} s after the "
                                       "credential was issued")
    if age > INTRO_REQUEST_WINDOW:
        raise Refused("request-stale", f"the request was {int(age) // 86400} days old when "
                                       f"the credential was issued (live "
                                       f"{INTRO_REQUEST_WINDOW // 86400} days)")
    return IntroductionRequest(subject, introducer, _asked_for(fields["text"]),
                               fields["messageId"], stamp, MappingProxyType(dict(record)))


def verify_introduction(credential: object, *, subject: str, recipient: str, now: int,
                        revoked: Revoked = (), verified: str | None = None) -> Introduction:
    """Verify ``credential`` as an introduction of ``subject`` to ``recipient`` at ``now``.

    In order: shape; the issuer's signature (bad-signature); the subject (wrong-subject);
    the recipient (wrong-recipient); expiry (expired); the provenance (unknown-mode,
    bad-provenance, request-stale, request-retargeted); ``revoked`` (a set of credential
    ids, or a predicate) (revoked). Total: anything else is ``Refused('malformed')``.
    A plain dict of the common shape takes ``_verify_common``, which reaches the same
    verdict by fewer steps; anything else, the steps below.

    ``verified``: the ``signed_digest`` of a credential the caller verified before (a
    proposal it holds). When this one's digest is the same, its signed bytes and
    signatures are the very ones that verified then, and the Ed25519 equations (the
    issuer's; an embedded request's without a KeyState) are not solved again; every other
    check is made.
    """
    if not subject or not recipient:
        raise Refused("wrong-recipient", "the verifier was given no subject or recipient")
    if type(credential) is dict:
        common = _verify_common(credential, subject, recipient, now, revoked, verified)
        if common is not None:
            return common
    if not _is_object(credential):
        raise Refused("malformed", "an introduction is a JSON object")
    doc = dict(credential)
    types = doc.get("type")
    if not isinstance(types, list) or "AgentIntroduction" not in types:
        raise Refused("malformed", "type does not name AgentIntroduction")
    cid = doc.get("id")
    if not isinstance(cid, str) or not cid or len(cid) > MAX_ID_LEN:
        raise Refused("malformed", f"id must be a string of 1..{MAX_ID_LEN} characters")
    issuer = doc.get("issuer")
    claims = doc.get("credentialSubject")
    proof = doc.get("proof")
    if not isinstance(issuer, str) or not _is_object(claims) or not _is_object(proof):
        raise Refused("malformed", "an introduction needs issuer, credentialSubject and proof")
    try:
        payload = signing_payload(doc)
    except MuretaiError as exc:  # a lone surrogate, a NaN: bytes no signer could have signed
        raise _issuer_unsigned(exc) from None
    jws = proof.get("jws")
    again = verified is not None and _digest(payload, jws) == verified
    if not again:
        _issuer_signed(issuer, payload, jws)
    return _after_signature(doc, cid, issuer, claims, subject, recipient, now, revoked, again)


def _after_signature(doc: dict[str, Any], cid: str, issuer: str, claims: Mapping[str, Any],
                     subject: str, recipient: str, now: int, revoked: Revoked,
                     again: bool) -> Introduction:
    """The rules after the issuer's signature, in ``verify_introduction``'s order."""
    if claims.get("id") != subject:
        raise Refused("wrong-subject", f"the introduction is of {_said(claims.get('id'))}, "
                                       f"not of {subject}")
    if claims.get("introducedTo") != recipient:
        raise Refused("wrong-recipient", f"the introduction is to "
                                         f"{_said(claims.get('introducedTo'))}, not to "
                                         f"{recipient}")
    trust = claims.get("trustLevelBp")
    if isinstance(trust, float):
        raise Refused("float-in-payload", f"trustLevelBp is a float ({trust!r}); it is "
                                          "integer basis points 0..1000")
    if isinstance(trust, bool) or not isinstance(trust, int) or not 0 <= trust <= BP_SCALE:
        raise Refused("malformed", "trustLevelBp must be an integer 0..1000")
    expertise = claims.get("expertise", [])
    if not isinstance(expertise, list):
        raise Refused("malformed", "expertise must be a list of strings")
    _check_expertise(expertise)
    until = parse_iso(claims.get("validUntil"), "validUntil")
    if until <= now:
        raise Refused("expired", f"the introduction expired at {claims.get('validUntil')}")
    issued = parse_iso(doc.get("issuanceDate"), "issuanceDate")
    provenance = _provenance(doc, subject=subject, issuer=issuer, recipient=recipient,
                             issued=issued, now=now, again=again)
    if revoked(cid) if callable(revoked) else cid in revoked:
        raise _revoked(cid)
    endpoint = doc.get("issuerEndpoint")
    if endpoint is not None and (not isinstance(endpoint, str) or len(endpoint) > MAX_URL_CHARS):
        raise Refused("malformed", "issuerEndpoint must be a URL string")
    return Introduction(cid, issuer, subject, recipient, tuple(expertise), trust, issued,
                        until, provenance, endpoint, MappingProxyType(doc))


def _provenance(doc: Mapping[str, Any], *, subject: str, issuer: str, recipient: str,
                issued: float, now: int, again: bool) -> Provenance:
    if "provenance" not in doc:
        return Provenance("unrecorded")
    prov = doc["provenance"]
    if not _is_object(prov):
        raise Refused("bad-provenance", "provenance is not a JSON object")
    mode = prov.get("mode")
    if mode == MODE_PROACTIVE:
        if "request" in prov:
            raise Refused("bad-provenance", "a proactive introduction carries a request; "
                                            "one mode or the other")
        return PROACTIVE
    if mode != MODE_REQUESTED:
        raise Refused("unknown-mode", f"provenance mode {_said(mode)} is not requested or "
                                      "proactive")
    request = check_request(prov.get("request"), subject=subject, introducer=issuer,
                            anchor=issued, now=now, again=again)
    if request.target is not None and request.target != recipient:
        raise Refused("request-retargeted", f"the subject asked to meet {request.target}, "
                                            f"not {recipient}")
    return Provenance("requested", request)


def signed_digest(credential: Mapping[str, Any]) -> str:
    """The digest of what an introduction's signatures cover (its signed bytes, which hold
    an embedded request and its ``sig``, and the issuer's ``jws``), for a caller that
    verified it to keep and hand back as ``verify_introduction``'s ``verified``."""
    proof = credential.get("proof")
    return _digest(signing_payload(credential),
                   proof.get("jws") if isinstance(proof, Mapping) else None)


def _digest(unsigned: bytes, jws: object) -> str:
    spelled = jws.encode("utf-8", "surrogatepass") if isinstance(jws, str) else b"-"
    return hashlib.sha256(len(unsigned).to_bytes(8, "big") + unsigned + spelled).hexdigest()


def _issuer_signed(issuer: str, payload: bytes, jws: object) -> None:
    try:
        public, raw = verifying_key_from_did(issuer)
        verify_strict(public, raw, payload, jws)
    except MuretaiError as exc:
        raise _issuer_unsigned(exc) from None


def _issuer_unsigned(exc: MuretaiError) -> Refused:
    return Refused("bad-signature", f"the issuer's signature does not verify "
                                    f"({exc.code}: {exc.detail})")


def _request_unsigned(exc: MuretaiError) -> Refused:
    return Refused("bad-provenance", f"the embedded request does not verify "
                                     f"({exc.code}: {exc.detail})")


def _revoked(cid: str) -> Refused:
    return Refused("revoked", f"the issuer revoked introduction {cid}")


def _asked_for(text: str) -> str | None:
    """The target a request's text names; None when it names none (the issuer chooses)."""
    return text[len(REQUEST_PREFIX):].strip() or None if text.startswith(REQUEST_PREFIX) \
        else None


def _is_object(value: object) -> TypeGuard[Mapping[str, Any]]:
    """A JSON object: a dict (what a parse gives, checked without the ABC) or a Mapping."""
    return type(value) is dict or isinstance(value, Mapping)


def _check_expertise(expertise: list[Any]) -> None:
    if len(expertise) > MAX_EXPERTISE or not all(
            isinstance(e, str) and len(e) <= MAX_EXPERTISE_CHARS for e in expertise):
        raise Refused("malformed", f"expertise is at most {MAX_EXPERTISE} strings of at most "
                                   f"{MAX_EXPERTISE_CHARS} characters")


def _said(value: object) -> str:
    return repr(value)[:80] if not isinstance(value, str) else value[:120]


# -- the common shape, in one pass --------------------------------------------------------

# The credential as the reference and ``mint_introduction`` write it: how many keys it, its
# credentialSubject and an embedded request have (with proof; with issuerEndpoint one more).
# ``_verify_common`` reads each of those keys by name: a count that matches and no key
# missing is exactly that key set.
_TOP_KEYS, _CLAIM_KEYS, _REQUEST_KEYS = 7, 5, 7
# Every byte but those of the characters the JSON string encoder escapes (", \ and the
# controls U+0000-001F; UTF-8 spells every other character in bytes >= 0x20): a text whose
# UTF-8 is all of these is spelled by ``canonical_bytes`` as itself between quotes.
_UNESCAPED = bytes(b for b in range(0x20, 0x100) if b not in b'"\\')


def _verify_common(doc: dict[str, Any], subject: str, recipient: str, now: int,
                   revoked: Revoked, verified: str | None) -> Introduction | None:
    """``verify_introduction`` for a plain dict of the shape the reference and
    ``mint_introduction`` write -- exactly the keys the wire names (``issuerEndpoint`` one
    more), each value of the type a parse gives (str; an int trust and request timestamp;
    lists of str; a request of the six signed fields and ``sig``, no KeyState), no text the
    JSON encoder would escape -- or None, having verified nothing, for any other shape (the
    general path answers it).

    Its steps are the general path's, fewer: the types read prove what the shape checks
    ask; the signed bytes are spelled straight from the values (keys in code-point order,
    each text between quotes, as ``canonical_bytes`` spells a text it need not escape), the
    request's six fields within them; the dates in the one spelling the reference writes
    are read without the general pattern. The issuer's signature answers as the general
    path's would, every check before it having passed; after it, a credential that misses
    any cheap rule goes to ``_after_signature``, which names the first rule it breaks, so
    no signature is checked twice. What is left can fail only at the request's signature
    or the revocation, in the general order."""
    try:
        claims, prov, proof = doc["credentialSubject"], doc["provenance"], doc["proof"]
        types, cid, issuer, issued_at = doc["type"], doc["id"], doc["issuer"], \
            doc["issuanceDate"]
        if type(claims) is not dict or type(prov) is not dict or type(proof) is not dict:
            return None
        sub, to, expertise, trust, until_at = claims["id"], claims["introducedTo"], \
            claims["expertise"], claims["trustLevelBp"], claims["validUntil"]
    except KeyError:
        return None
    endpoint = doc.get("issuerEndpoint")
    if len(doc) != _TOP_KEYS + (endpoint is not None) or len(claims) != _CLAIM_KEYS \
            or type(types) is not list or type(expertise) is not list or type(trust) is not int \
            or type(cid) is not str or type(issuer) is not str or type(sub) is not str \
            or type(to) is not str or type(issued_at) is not str or type(until_at) is not str \
            or (endpoint is not None and type(endpoint) is not str) \
            or "AgentIntroduction" not in types or not 0 < len(cid) <= MAX_ID_LEN:
        return None  # (the bool is no int here: type(), not isinstance)
    mode = prov.get("mode")
    record: Any = prov.get("request")
    if mode == MODE_PROACTIVE and type(mode) is str and len(prov) == 1:
        asking = tail = ""  # no request: nothing more to verify
        spelled_prov, request_texts = '{"mode":"proactive"}', ""
    elif mode == MODE_REQUESTED and type(mode) is str and len(prov) == 2 \
            and type(record) is dict and len(record) == _REQUEST_KEYS:
        try:
            context, sender, mid, sig, text, stamp, asked = record["contextId"], \
                record["from"], record["messageId"], record["sig"], record["text"], \
                record["timestamp"], record["to"]
        except KeyError:
            return None
        if type(sender) is not str or type(asked) is not str or type(mid) is not str \
                or type(text) is not str or type(sig) is not str or type(stamp) is not int \
                or (context is not None and type(context) is not str) \
                or not 0 < len(mid) <= MAX_ID_LEN or not -MAX_SAFE_INT <= stamp <= MAX_SAFE_INT:
            return None
        spelled_context = "null" if context is None else '"' + context + '"'
        asking = f'{{"contextId":{spelled_context},"from":"{sender}","messageId":"{mid}"'
        tail = f'"text":"{text}","timestamp":{stamp},"to":"{asked}"}}'
        spelled_prov = f'{{"mode":"requested","request":{asking},"sig":"{sig}",{tail}}}'
        request_texts = "".join((context or "", sender, mid, sig, text, asked))
    else:
        return None
    spelled_end = "" if endpoint is None else ',"issuerEndpoint":"' + endpoint + '"'
    try:  # every text at once: if one needs escaping, the general path spells them
        if "".join([sub, to, until_at, cid, issued_at, issuer, endpoint or "", *expertise,
                    *types, request_texts]).encode().translate(None, _UNESCAPED):
            return None
        listed = '"' + '","'.join(expertise) + '"' if expertise else ""  # texts in a list
        typed = '"' + '","'.join(types) + '"' if types else ""
        payload = (
            f'{{"credentialSubject":{{"expertise":[{listed}],"id":"{sub}"'
            f',"introducedTo":"{to}","trustLevelBp":{trust},"validUntil":"{until_at}"}}'
            f',"id":"{cid}","issuanceDate":"{issued_at}","issuer":"{issuer}"{spelled_end}'
            f',"provenance":{spelled_prov},"type":[{typed}]}}'
        ).encode()
    except (TypeError, UnicodeEncodeError):  # a list item not a str; a lone surrogate
        return None
    # The rules after the signatures, weighed first (nothing raised yet), so that the
    # request's equation follows the issuer's with next to nothing between them.
    until, issued = iso_seconds(until_at), iso_seconds(issued_at)
    holds = sub == subject and to == recipient and 0 <= trust <= BP_SCALE \
        and len(expertise) <= MAX_EXPERTISE \
        and (not expertise or max(map(len, expertise)) <= MAX_EXPERTISE_CHARS) \
        and until is not None and until > now and issued is not None \
        and (endpoint is None or len(endpoint) <= MAX_URL_CHARS)
    target = _asked_for(text) if asking else None
    if holds and asking:
        holds = sender == subject and asked == issuer \
            and -CLOCK_SKEW <= issued - stamp <= INTRO_REQUEST_WINDOW \
            and (target is None or target == recipient)
    jws = proof.get("jws")
    again = verified is not None and _digest(payload, jws) == verified
    if not again:
        try:
            public, raw = verifying_key_from_did(issuer)
            verify_strict(public, raw, payload, jws)
        except MuretaiError as exc:
            raise _issuer_unsigned(exc) from None
    if not holds or until is None or issued is None:  # (the Nones: for the type checker)
        # the general tail names the first rule broken, solving no equation twice
        return _after_signature(dict(doc), cid, issuer, claims, subject, recipient, now,
                                revoked, again)
    if asking:  # requested
        if not again:
            try:
                public, raw = verifying_key_from_did(sender)  # no KeyState: ``from`` signs
                verify_strict(public, raw, f"{asking},{tail}".encode(), sig)
            except MuretaiError as exc:
                raise _request_unsigned(exc) from None
        provenance = proven_requested(proven_request(
            subject, issuer, target, mid, stamp, MappingProxyType(record.copy())))
    else:
        provenance = PROACTIVE
    if revoked(cid) if callable(revoked) else cid in revoked:
        raise _revoked(cid)
    return proven_introduction(cid, issuer, subject, recipient, tuple(expertise), trust,
                               issued, until, provenance, endpoint, MappingProxyType(doc.copy()))

