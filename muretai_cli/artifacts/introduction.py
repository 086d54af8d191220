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
import re
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from json.encoder import encode_basestring
from types import MappingProxyType
from typing import Any, Literal, TypeGuard

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
    verify_signature,
)

INTRODUCTION_TYPE = ("VerifiableCredential", "AgentIntroduction")
PROOF_TYPE = "Ed25519Signature2020"
MODE_REQUESTED = "requested"
MODE_PROACTIVE = "proactive"
BP_SCALE = 1000  # trustLevelBp: basis points of 1.0, an integer 0..1000
DEFAULT_VALIDITY = 30 * 86400
MAX_EXPERTISE = 32  # entries in credentialSubject.expertise
MAX_EXPERTISE_CHARS = 200  # characters of one entry
MAX_URL_CHARS = 2048  # characters of issuerEndpoint

Mode = Literal["requested", "proactive", "unrecorded"]
Revoked = Collection[str] | Callable[[str], bool]

# The reference writes seconds and a Z; other clients write milliseconds or an offset.
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)?")


def iso_utc(epoch: int) -> str:
    """An epoch second as the reference writes it: ``2026-12-02T01:02:16Z``."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: object, field: str) -> float:
    """An ISO 8601 date-time as epoch seconds (no offset: UTC, as the reference reads it),
    or ``Refused('malformed')`` naming the field."""
    if not isinstance(text, str) or len(text) > 40 or not _ISO.fullmatch(text):
        raise Refused("malformed", f"{field} must be an ISO 8601 date-time such as "
                                   "2026-12-02T01:02:16Z")
    try:
        when = datetime.fromisoformat(text)  # 3.11 reads the Z itself
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp()
    except (ValueError, OverflowError):
        raise Refused("malformed", f"{field} is not a calendar date-time") from None


def trust_bp(level: str) -> int:
    """A trust level a person typed, a decimal in [0, 1] with at most three places, as the
    integer basis points the wire carries (``0.873`` → 873). Never rounded, never a float."""
    try:
        value = Decimal(level.strip())
    except InvalidOperation:
        raise Refused("bad-trust", f"trust {level[:40]!r} is not a decimal number") from None
    if not value.is_finite() or not 0 <= value <= 1:
        raise Refused("bad-trust", f"trust {level[:40]!r} is outside 0.0–1.0")
    scaled = value * BP_SCALE
    if scaled != scaled.to_integral_value():
        raise Refused("bad-trust", f"trust {level[:40]!r} has more than three decimal places")
    return int(scaled)


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


@dataclass(frozen=True, slots=True)
class IntroductionRequest:
    """A subject's request whose signature verified, bound to a subject and an introducer.
    ``target`` is None for a request naming no DID (the introducer chooses)."""

    subject: str
    introducer: str
    target: str | None
    message_id: str
    timestamp: int
    doc: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Provenance:
    """How the introduction came to be. ``unrecorded``: the credential has no provenance
    (minted before the field existed), which the public contract tolerates."""

    mode: Mode
    request: IntroductionRequest | None = None

    def __post_init__(self) -> None:
        if (self.mode == MODE_REQUESTED) != (self.request is not None):
            raise ValueError("a requested provenance carries its request, and only it does")


@dataclass(frozen=True, slots=True)
class Introduction:
    """An introduction whose signature verified, for the subject and the recipient the
    caller expected, unexpired and unrevoked at the time it was checked. Built only by
    ``verify_introduction``; ``doc`` is the credential as received (what is signed)."""

    id: str
    issuer: str
    subject: str
    introduced_to: str
    expertise: tuple[str, ...]
    trust_bp: int
    issued_at: float
    valid_until: float
    provenance: Provenance
    issuer_endpoint: str | None
    doc: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not 0 <= self.trust_bp <= BP_SCALE:
            raise ValueError("trust_bp is 0..1000")

    def to_json(self) -> dict[str, Any]:
        """The credential as received: what a holder forwards."""
        return dict(self.doc)

    def facts(self) -> dict[str, Any]:
        """What was established, camelCase, for a report."""
        request = self.provenance.request
        return {"id": self.id, "issuer": self.issuer, "subject": self.subject,
                "introducedTo": self.introduced_to, "expertise": list(self.expertise),
                "trustLevelBp": self.trust_bp, "validUntil": self.doc["credentialSubject"]
                ["validUntil"], "provenance": self.provenance.mode,
                "requestedAt": request.timestamp if request else None,
                "issuerEndpoint": self.issuer_endpoint}


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
    's ``verified``), so a plain request's equation is not solved twice; one with a KeyState
    is verified in full (its delegation is judged at ``now``)."""
    from muretai_cli.artifacts.keystate import resolve_op_did

    if not isinstance(record, Mapping):
        raise Refused("bad-provenance", "the embedded request is not a JSON object")
    plain = _plain_request(record)
    try:
        if plain is not None:  # no keystate: the signer is ``from`` itself, as resolved
            fields, payload = plain
            if not again:
                verify_signature(fields["from"], payload, record["sig"])
        else:
            fields = six_fields(record)
            signer = resolve_op_did(fields["from"], record.get("keystate"), None,
                                    now=now).op_did
            check_signed_fields(fields, record.get("sig"), signer=signer)
    except MuretaiError as exc:
        raise Refused("bad-provenance", f"the embedded request does not verify "
                                        f"({exc.code}: {exc.detail})") from None
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
    text = fields["text"]
    target = text[len(REQUEST_PREFIX):].strip() or None \
        if text.startswith(REQUEST_PREFIX) else None
    return IntroductionRequest(subject, introducer, target, fields["messageId"], stamp,
                               MappingProxyType(dict(record)))


def verify_introduction(credential: object, *, subject: str, recipient: str, now: int,
                        revoked: Revoked = (), verified: str | None = None) -> Introduction:
    """Verify ``credential`` as an introduction of ``subject`` to ``recipient`` at ``now``.

    In order: shape; the issuer's signature (bad-signature); the subject (wrong-subject);
    the recipient (wrong-recipient); expiry (expired); the provenance (unknown-mode,
    bad-provenance, request-stale, request-retargeted); ``revoked`` (a set of credential
    ids, or a predicate) (revoked). Total: anything else is ``Refused('malformed')``.

    ``verified``: the ``signed_digest`` of a credential the caller verified before (a
    proposal it holds). When this one's digest is the same, its signed bytes and
    signatures are the very ones that verified then, and the Ed25519 equations (the
    issuer's; a plain embedded request's) are not solved again; every other check is made.
    """
    if not subject or not recipient:
        raise Refused("wrong-recipient", "the verifier was given no subject or recipient")
    if type(credential) is not dict and not isinstance(credential, Mapping):
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
    unsigned, jws = _unsigned_bytes(doc), proof.get("jws")
    again = verified is not None and _digest(unsigned, jws) == verified
    if not again:
        try:
            verify_signature(issuer, unsigned, jws)
        except MuretaiError as exc:
            raise Refused("bad-signature", f"the issuer's signature does not verify "
                                           f"({exc.code}: {exc.detail})") from None
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
        raise Refused("revoked", f"the issuer revoked introduction {cid}")
    endpoint = doc.get("issuerEndpoint")
    if endpoint is not None and (not isinstance(endpoint, str) or len(endpoint) > MAX_URL_CHARS):
        raise Refused("malformed", "issuerEndpoint must be a URL string")
    return Introduction(cid, issuer, subject, recipient, tuple(expertise), trust, issued,
                        until, provenance, endpoint, MappingProxyType(doc))


def _provenance(doc: Mapping[str, Any], *, subject: str, issuer: str, recipient: str,
                issued: float, now: int, again: bool = False) -> Provenance:
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
        return Provenance("proactive")
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
    return _digest(_unsigned_bytes(dict(credential)),
                   proof.get("jws") if isinstance(proof, Mapping) else None)


def _digest(unsigned: bytes, jws: object) -> str:
    spelled = jws.encode("utf-8", "surrogatepass") if isinstance(jws, str) else b"-"
    return hashlib.sha256(len(unsigned).to_bytes(8, "big") + unsigned + spelled).hexdigest()


def _is_object(value: object) -> TypeGuard[Mapping[str, Any]]:
    """A JSON object: a dict (what a parse gives, checked without the ABC) or a Mapping."""
    return type(value) is dict or isinstance(value, Mapping)


# The credential as the reference and ``mint_introduction`` write it: how many keys it, its
# credentialSubject and an embedded request have (with proof; with issuerEndpoint one more).
# ``_common_shape`` reads each of those keys by name: a count that matches and no key
# missing is exactly that key set.
_TOP_KEYS, _CLAIM_KEYS, _REQUEST_KEYS = 7, 5, 7
_PROACTIVE = {"mode": MODE_PROACTIVE}


def _unsigned_bytes(doc: dict[str, Any]) -> bytes:
    """``signing_payload(doc)``, the same bytes: the canonical bytes of the credential
    without ``proof``. When it has exactly the common shape (the keys the wire names, every
    value a str, an int or a list of str, and null for a request's contextId) they are
    spelled straight from its values, keys in code-point order, each string by the one JSON
    string encoder the canonical encoder itself uses; anything else, by ``canonical_bytes``.
    One pass over the strings instead of the generic encoder's walk, sort and dispatch."""
    try:
        fast = _common_shape(doc)
    except (KeyError, TypeError):  # a key missing, a value of another type
        fast = None
    return signing_payload(doc) if fast is None else fast


def _common_shape(doc: dict[str, Any]) -> bytes | None:
    e = encode_basestring  # TypeError for anything but a str (a str subclass spells alike)
    endpoint = "issuerEndpoint" in doc
    claims, types, prov = doc["credentialSubject"], doc["type"], doc["provenance"]
    trust = claims["trustLevelBp"]
    if len(doc) != _TOP_KEYS + endpoint \
            or "proof" not in doc or type(claims) is not dict or len(claims) != _CLAIM_KEYS \
            or type(types) is not list or type(claims["expertise"]) is not list \
            or type(trust) is not int or type(prov) is not dict:  # (a bool is no int here)
        return None
    if prov == _PROACTIVE:
        provenance = '{"mode":"proactive"}'
    elif len(prov) == 2 and prov["mode"] == MODE_REQUESTED:
        provenance = '{"mode":"requested","request":' + _common_request(prov["request"]) + "}"
    else:
        return None
    text = ('{"credentialSubject":{"expertise":[' + ",".join(map(e, claims["expertise"]))
            + '],"id":' + e(claims["id"]) + ',"introducedTo":' + e(claims["introducedTo"])
            + ',"trustLevelBp":' + int.__repr__(trust) + ',"validUntil":'
            + e(claims["validUntil"]) + '},"id":' + e(doc["id"]) + ',"issuanceDate":'
            + e(doc["issuanceDate"]) + ',"issuer":' + e(doc["issuer"])
            + (',"issuerEndpoint":' + e(doc["issuerEndpoint"]) if endpoint else "")
            + ',"provenance":' + provenance + ',"type":[' + ",".join(map(e, types)) + "]}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: canonical_bytes names it
        return None


def _common_request(request: Any) -> str:
    """The canonical text of an embedded request of the six fields and ``sig``; TypeError
    or KeyError for any other."""
    stamp, context = request["timestamp"], request["contextId"]
    if type(request) is not dict or len(request) != _REQUEST_KEYS or type(stamp) is not int:
        raise TypeError("not the common shape")
    e = encode_basestring
    return ('{"contextId":' + ("null" if context is None else e(context)) + ',"from":'
            + e(request["from"]) + ',"messageId":' + e(request["messageId"]) + ',"sig":'
            + e(request["sig"]) + ',"text":' + e(request["text"]) + ',"timestamp":'
            + int.__repr__(stamp) + ',"to":' + e(request["to"]) + "}")


def _plain_request(record: Mapping[str, Any]) -> tuple[dict[str, Any], bytes] | None:
    """For an embedded request of the common shape -- a plain dict of exactly the six signed
    fields and ``sig``, each of a type ``six_fields`` accepts as it is (str; an int
    timestamp within range; contextId null or a str; a messageId of 1..MAX_ID_LEN) -- its
    six fields and their canonical bytes (``canonical_bytes(six_fields(record))``, the same
    bytes), spelled straight from the values as ``_common_request`` spells them. None for
    any other shape (a keystate, a float or string timestamp, a str subclass, a lone
    surrogate...), which takes the general path and its named reasons."""
    if type(record) is not dict or len(record) != _REQUEST_KEYS or "sig" not in record:
        return None
    context, sender, mid = record.get("contextId"), record.get("from"), record.get("messageId")
    text, stamp, to = record.get("text"), record.get("timestamp"), record.get("to")
    if type(sender) is not str or type(to) is not str or type(mid) is not str \
            or type(text) is not str or (context is not None and type(context) is not str) \
            or type(stamp) is not int or not mid or len(mid) > MAX_ID_LEN \
            or not -MAX_SAFE_INT <= stamp <= MAX_SAFE_INT or "contextId" not in record:
        return None
    e = encode_basestring
    spelled = ('{"contextId":' + ("null" if context is None else e(context)) + ',"from":'
               + e(sender) + ',"messageId":' + e(mid) + ',"text":' + e(text)
               + ',"timestamp":' + int.__repr__(stamp) + ',"to":' + e(to) + "}")
    try:
        payload = spelled.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: canonical_bytes names it
        return None
    return ({"contextId": context, "from": sender, "messageId": mid, "text": text,
             "timestamp": stamp, "to": to}, payload)


def _check_expertise(expertise: list[Any]) -> None:
    if len(expertise) > MAX_EXPERTISE or not all(
            isinstance(e, str) and len(e) <= MAX_EXPERTISE_CHARS for e in expertise):
        raise Refused("malformed", f"expertise is at most {MAX_EXPERTISE} strings of at most "
                                   f"{MAX_EXPERTISE_CHARS} characters")


def _said(value: object) -> str:
    return repr(value)[:80] if not isinstance(value, str) else value[:120]
