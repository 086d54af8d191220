"""Invites and claims (seam §10): how two strangers' agents meet.

    invite {"v": 1, "did", "name", "specialty", "url", "relay"?, "enc_pub"?, "nonce", "exp",
            "sig"}   -- sig by did over the card without sig; exp "YYYY-MM-DDTHH:MM:SSZ"
    claim  {"method": "onboard/claim", "message": {six signed fields, text "onboard/claim",
            to = the inviter, sig}, "nonce", "name", "enc_pub"?, "relay"?, "url"?}

The invite's signature proves the inviter controls its DID and binds its addresses to it. A
claim is the answer: signed by the joiner, addressed to the inviter, carrying the one-time
nonce the inviter issued. The claim's side fields ride beside its signature; muretai binds
them under it by setting the signed ``contextId`` to a digest of them (``claim_binding``), and
an inviter refuses a claim whose digest does not match. A claim from elsewhere without one is
accepted as the wire allows and reported ``unbound-fields``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from muretai_cli.artifacts._signed import int_field, object_payload, str_field, verify_object
from muretai_cli.errors import InputError, Refused
from muretai_cli.seam import (
    MESSAGE_WINDOW,
    SigningKey,
    canonical_bytes,
    check_fresh,
    is_enc_pub,
    parse_document,
    public_from_did,
    sign_envelope,
    verify_envelope,
)
from muretai_cli.verdict import Reason, warning

INVITE_PREFIX = "muretai:invite:"
CLAIM_METHOD = "onboard/claim"
CLAIM_TEXT = "onboard/claim"
CLAIM_CONTEXT_PREFIX = "muretai-claim:"
MAX_NAME = 200
MAX_NONCE = 256
MAX_INVITE_TEXT = 16 * 1024
_EXP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
INVITE_LINK = "agent://invite?d="
# muretai's https link: the card rides in the fragment, which no server ever receives.
_HTTPS_LINK = re.compile(r"https://[A-Za-z0-9.-]+(?::[0-9]{1,5})?/invitation#d=(.*)", re.S)
INVITE_FORMS = ("muretai:invite:…", "https://HOST/invitation#d=…", "agent://invite?d=…",
                "the invite's JSON (a file, or -)")
_FORMS_HINT = "an invite is one of: " + ", ".join(INVITE_FORMS)


def iso_utc(epoch: int) -> str:
    """An invite's ``exp`` spelling: ISO-8601 UTC to the second, with ``Z``."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_exp(text: object) -> int:
    """``exp`` as an epoch second; only the one spelling ``iso_utc`` writes is read."""
    if not isinstance(text, str) or not _EXP.fullmatch(text):
        raise Refused("malformed-invite", "exp must be YYYY-MM-DDTHH:MM:SSZ (UTC)")
    try:
        moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise Refused("malformed-invite", f"exp {text!r} is not a real date and time") from None
    return int(moment.timestamp())


def _optional_str(obj: Mapping[str, Any], name: str, code: str, limit: int = 2048
                  ) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise Refused(code, f"{name} must be a string of at most {limit} characters")
    return value


def _enc_pub(obj: Mapping[str, Any], code: str) -> str | None:
    value = _optional_str(obj, "enc_pub", code, 64)
    if value is not None and not is_enc_pub(value):
        raise Refused(code, "enc_pub is 64 lowercase hex characters (an X25519 key)")
    return value


@dataclass(frozen=True, slots=True)
class Invite:
    """A verified invite card. Built only by ``verify_invite``."""

    did: str
    name: str
    specialty: str
    url: str
    relay: str | None
    enc_pub: str | None
    nonce: str
    exp: int
    card: Mapping[str, Any] = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        return dict(self.card)


def verify_invite(obj: object, *, now: int) -> Invite:
    """An invite whose signature verifies under the DID it names and which has not expired
    at the caller's ``now``; or ``Refused``: ``malformed-invite``, ``float-in-payload``,
    ``missing-sig``, a signature code, ``expired-invite``."""
    if not isinstance(obj, dict):
        raise Refused("malformed-invite", "an invite is a JSON object")
    if obj.get("v") != 1 or isinstance(obj.get("v"), bool):
        raise Refused("malformed-invite", "v must be the integer 1")
    did = str_field(obj, "did", code="malformed-invite")
    public_from_did(did)
    name = str_field(obj, "name", code="malformed-invite", limit=MAX_NAME)
    nonce = str_field(obj, "nonce", code="malformed-invite", limit=MAX_NONCE)
    specialty = _optional_str(obj, "specialty", "malformed-invite", MAX_NAME) or ""
    url = _optional_str(obj, "url", "malformed-invite") or ""
    relay = _optional_str(obj, "relay", "malformed-invite") or None
    enc_pub = _enc_pub(obj, "malformed-invite")
    exp = parse_exp(obj.get("exp"))
    verify_object(obj, did)
    if exp <= now:
        raise Refused("expired-invite", f"the invite expired at {obj['exp']}")
    return Invite(did, name, specialty, url, relay, enc_pub, nonce, exp, dict(obj))


def mint_invite(key: SigningKey, *, name: str, exp: int, url: str = "",
                relay: str | None = None, enc_pub: str | None = None,
                specialty: str = "general") -> dict[str, Any]:
    """A signed invite card with a fresh 128-bit hex nonce."""
    if not url and not relay:
        raise InputError("unreachable-identity", "an invite needs a door url or a relay, so "
                                                 "the person invited can answer",
                         hint="give --url URL (your door's public base URL: `muretai serve`) "
                              "or --relay URL, or record a relay for this identity once: "
                              "`muretai id relay NAME URL`")
    body: dict[str, Any] = {"v": 1, "did": key.did, "name": name, "specialty": specialty,
                            "url": url, "nonce": secrets.token_hex(16), "exp": iso_utc(exp)}
    if relay:
        body["relay"] = relay
    if enc_pub:
        body["enc_pub"] = enc_pub
    return {**body, "sig": key.sign(object_payload(body))}


def invite_text(card: Mapping[str, Any]) -> str:
    """The one-line paste form: ``muretai:invite:`` + unpadded base64url of canonical JSON."""
    raw = canonical_bytes(dict(card))
    return INVITE_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def invite_link(card: Mapping[str, Any]) -> str:
    """The link form: ``agent://invite?d=`` + the same unpadded base64url as the paste form."""
    return INVITE_LINK + invite_text(card)[len(INVITE_PREFIX):]


def _link_token(text: str) -> str | None:
    """The ``d=`` token of one of muretai's link forms, or None when ``text`` is not one."""
    if text.startswith(INVITE_LINK):
        return text[len(INVITE_LINK):]
    found = _HTTPS_LINK.fullmatch(text)
    return found.group(1) if found else None


def _unpadded(body: str, padded_ok: bool) -> str:
    """``body`` without its padding: a link may carry exact padding (the public reader pads
    what is missing), the paste form none; anything else is not an invite's spelling."""
    if padded_ok and body.endswith("="):
        stripped = body.rstrip("=")
        if len(body) % 4 or len(body) - len(stripped) != -len(stripped) % 4:
            raise InputError("bad-invite-text", "the link's base64url padding is wrong",
                             hint=_FORMS_HINT)
        return stripped
    return body


def read_invite(text: str | bytes) -> object:
    """An invite as people paste it, through the parse boundary: ``muretai:invite:…``, a
    link (``https://HOST/invitation#d=…`` or ``agent://invite?d=…``), or its JSON. Anything
    else is ``InputError('bad-invite-text')`` naming the forms.

    The base64url re-encodes to itself (one spelling per invite): unpadded, except that a
    link may carry exact padding.
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    raw = raw.strip()
    if len(raw) > MAX_INVITE_TEXT:
        raise InputError("too-large", f"an invite is at most {MAX_INVITE_TEXT} bytes")
    pasted = raw.decode("ascii", "replace")
    if raw.startswith(INVITE_PREFIX.encode()):
        body = _unpadded(pasted[len(INVITE_PREFIX):], padded_ok=False)
    elif (token := _link_token(pasted)) is not None:
        body = _unpadded(token, padded_ok=True)
    elif raw[:1] in (b"{", b"["):  # JSON: the verifier names what is wrong with it
        return parse_document(raw)
    else:
        raise InputError("bad-invite-text", "not an invite in any form muretai reads",
                         hint=_FORMS_HINT)
    if not _B64URL.fullmatch(body) or len(body) % 4 == 1:
        raise InputError("bad-invite-text", "the invite's token is not unpadded base64url",
                         hint=_FORMS_HINT)
    try:
        decoded = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raise InputError("bad-invite-text", "the invite text is not base64url") from None
    if base64.urlsafe_b64encode(decoded).decode("ascii").rstrip("=") != body:
        raise InputError("bad-invite-text", "the invite text is not in its one spelling "
                                            "(non-zero trailing bits)")
    return parse_document(decoded)


# -- claims -----------------------------------------------------------------------------


def claim_binding(*, nonce: str, name: str, enc_pub: str | None, relay: str | None,
                  url: str | None) -> str:
    """The signed ``contextId`` that binds a claim's side fields under its signature."""
    sides = {"enc_pub": enc_pub, "name": name, "nonce": nonce, "relay": relay, "url": url}
    return CLAIM_CONTEXT_PREFIX + hashlib.sha256(canonical_bytes(sides)).hexdigest()


def build_claim(key: SigningKey, *, invite: Invite, name: str, now: int,
                enc_pub: str | None = None, relay: str | None = None,
                url: str | None = None) -> dict[str, Any]:
    """An ``onboard/claim`` for ``invite``, signed by the joiner, side fields bound."""
    context = claim_binding(nonce=invite.nonce, name=name, enc_pub=enc_pub, relay=relay,
                            url=url)
    message = sign_envelope(key, to=invite.did, text=CLAIM_TEXT, timestamp=now,
                            context_id=context)
    claim: dict[str, Any] = {"method": CLAIM_METHOD, "message": message,
                             "nonce": invite.nonce, "name": name}
    for key_name, value in (("enc_pub", enc_pub), ("relay", relay), ("url", url)):
        if value:
            claim[key_name] = value
    return claim


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim whose signature verified for this inviter. Built only by ``verify_claim``;
    its nonce is not yet judged (that needs the inviter's store)."""

    from_did: str
    nonce: str
    name: str
    enc_pub: str | None
    relay: str | None
    url: str | None
    message_id: str
    timestamp: int
    notes: tuple[Reason, ...] = ()


def claim_message(obj: object) -> tuple[dict[str, Any], dict[str, Any]]:
    """A claim object and the signed message it carries (neither read nor verified yet),
    or ``Refused`` ``malformed-claim``."""
    if not isinstance(obj, dict) or obj.get("method") != CLAIM_METHOD:
        raise Refused("malformed-claim", f"a claim is an object with method {CLAIM_METHOD!r}")
    message = obj.get("message")
    if not isinstance(message, dict):
        raise Refused("malformed-claim", "a claim carries its signed message")
    return obj, message


def _claim_text(fields: Mapping[str, Any]) -> None:
    if fields["text"] != CLAIM_TEXT:
        raise Refused("malformed-claim", f"a claim's signed text is {CLAIM_TEXT!r}")


def claim_of(obj: Mapping[str, Any], fields: Mapping[str, Any]) -> Claim:
    """The ``Claim`` of ``obj`` whose message's six ``fields`` (as received) the caller
    verified, recipient, signature and freshness: its text, side fields and their binding;
    or ``Refused``."""
    _claim_text(fields)
    timestamp = int_field(fields, "timestamp")
    nonce = str_field(obj, "nonce", code="malformed-claim", limit=MAX_NONCE)
    name = str_field(obj, "name", code="malformed-claim", limit=MAX_NAME)
    enc_pub = _enc_pub(obj, "malformed-claim")
    relay = _optional_str(obj, "relay", "malformed-claim") or None
    url = _optional_str(obj, "url", "malformed-claim") or None
    context = fields["contextId"]
    notes: list[Reason] = []
    if isinstance(context, str) and context.startswith(CLAIM_CONTEXT_PREFIX):
        if context != claim_binding(nonce=nonce, name=name, enc_pub=enc_pub, relay=relay,
                                    url=url):
            raise Refused("claim-fields-altered", "the claim's nonce, name or addresses are "
                                                  "not the ones its signer bound")
    else:
        notes.append(warning("unbound-fields", "the claim's side fields are not covered by "
                                               "its signature; only the transport vouches"))
    return Claim(fields["from"], nonce, name, enc_pub, relay, url, fields["messageId"],
                 timestamp, tuple(notes))


def verify_claim(obj: object, *, inviter_did: str, now: int, window: int = MESSAGE_WINDOW
                 ) -> Claim:
    """A claim for the inviter the CALLER names, offline (the seam's claim vectors).
    Signature first (the signer is ``from``), then its text, freshness, side fields and
    their binding; or ``Refused``. An inviter RECEIVING a claim reads it through the
    receiving pipeline instead (``inbox.claims``: ``read_envelope``, ``CLAIM_WINDOW``)."""
    claim, message = claim_message(obj)
    fields = verify_envelope(message, to_did=inviter_did)
    _claim_text(fields)
    check_fresh(int_field(fields, "timestamp"), now, window)
    return claim_of(claim, fields)


def accept_claim(obj: object, *, inviter_did: str, now: int,
                 spend: Callable[[Claim], None]) -> Claim:
    """``verify_claim``, then ``spend`` its nonce (the inviter's store: issued by this
    identity, unexpired, a use left, spent atomically; it raises ``Refused`` otherwise).
    Nothing about the joiner is written unless the signature verified first."""
    claim = verify_claim(obj, inviter_did=inviter_did, now=now)
    spend(claim)
    return claim
