"""Web Bot Auth (seam §8): the RFC 9421 subset a signed agent and a website share.

A did:key and an OKP JWK are two spellings of the same 32 bytes, so the identity key signs
HTTP requests as it is. What each side proves:

* a signed *request* (tag ``web-bot-auth``) says the holder of a key asked THIS authority,
  within a few minutes; which key directory to trust is the verifier's business;
* a signed *directory* (tag ``http-message-signatures-directory``) says the origin serving
  it holds each key it lists: a copied public key cannot sign ``@authority``.

Signing writes the parameters in one fixed order; verification rebuilds the signature base
from the parameter text exactly as received. The structured-field syntax (RFC 8941/9651,
this profile only) is ``_sfv``'s; this module holds the signature rules. Nothing here does
I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam._b64 import b64url_decode_strict, b64url_encode
from muretai_cli.seam._canonical import parse_document
from muretai_cli.seam._ed25519 import SigningKey
from muretai_cli.seam._limits import (
    CLOCK_SKEW,
    DIRECTORY_WINDOW,
    MAX_DIRECTORY_BYTES,
    MAX_DIRECTORY_LIFETIME,
    MAX_HEADER_CHARS,
    MAX_REQUEST_LIFETIME,
    REQUEST_WINDOW,
)
from muretai_cli.seam._sfv import SfParser, sf_string, signature_input_members, signature_members

DIRECTORY_PATH = "/.well-known/http-message-signatures-directory"
DIRECTORY_MEDIA_TYPE = "application/http-message-signatures-directory+json"
TAG_REQUEST = "web-bot-auth"
TAG_DIRECTORY = "http-message-signatures-directory"
ALG = "ed25519"  # RFC 9421's registry name; JOSE's "EdDSA" is refused here
_DEFAULT_PORTS = {"http": 80, "https": 443}


# -- keys ---------------------------------------------------------------------------------
def jwk_from_public(public: bytes) -> dict[str, str]:
    """An Ed25519 public key as an OKP JWK: exactly the three RFC 7638 members."""
    return {"crv": "Ed25519", "kty": "OKP", "x": b64url_encode(public)}


def public_from_jwk(jwk: object) -> bytes:
    """The 32 key bytes of an OKP Ed25519 JWK whose ``x`` has its one canonical spelling."""
    if not isinstance(jwk, dict) or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
        raise Refused("bad-jwk", "not an OKP Ed25519 JWK")
    raw = b64url_decode_strict(jwk.get("x"), code="bad-jwk", limit=64)
    if len(raw) != 32:
        raise Refused("bad-jwk", f"x decodes to {len(raw)} bytes, not 32")
    return raw


def jwk_thumbprint(public: bytes) -> str:
    """RFC 7638 thumbprint (base64url SHA-256 of the required members): the wire ``keyid``."""
    text = json.dumps(jwk_from_public(public), sort_keys=True, separators=(",", ":"))
    return b64url_encode(hashlib.sha256(text.encode("ascii")).digest())


def directory_body(public_keys: Sequence[bytes]) -> bytes:
    """The bytes of a key directory ``{"keys": [jwk, …]}`` (sorted keys, no whitespace)."""
    doc = {"keys": [jwk_from_public(p) for p in public_keys]}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("ascii")


# -- signing ------------------------------------------------------------------------------
def authority_of(url: str) -> str:
    """The ``@authority`` of a URL: lowercased host, ``:port`` only when not the default."""
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise Refused("bad-url", f"{url[:200]!r} has no host")
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme.lower()):
        return f"{host}:{port}"
    return host


def signature_params(components: Sequence[str], *, created: int, expires: int, keyid: str,
                     tag: str) -> str:
    """The ``@signature-params`` value, parameters in the one order muretai signs."""
    inner = " ".join(sf_string(c) for c in components)
    return (f"({inner});created={int(created)};expires={int(expires)};"
            f"keyid={sf_string(keyid)};alg={sf_string(ALG)};tag={sf_string(tag)}")


def signature_base(components: Sequence[tuple[str, str]], params: str) -> bytes:
    """One ``"name": value`` line per component, then ``"@signature-params"``; LF, no final LF."""
    lines = [f"{sf_string(name)}: {value}" for name, value in components]
    lines.append(f'"@signature-params": {params}')
    return "\n".join(lines).encode("utf-8")


def _sign(key: SigningKey, components: Sequence[tuple[str, str]], *, created: int,
          expires: int, tag: str, label: str = "sig1") -> tuple[str, str]:
    params = signature_params([n for n, _ in components], created=created, expires=expires,
                              keyid=jwk_thumbprint(key.public_bytes), tag=tag)
    sig = key.sign(signature_base(components, params))
    return f"{label}={params}", f"{label}=:{sig}:"


def sign_request(key: SigningKey, url: str, *, signature_agent: str, created: int,
                 window: int = REQUEST_WINDOW) -> dict[str, str]:
    """The three headers that sign one request to ``url`` as ``key``.

    ``signature_agent`` is the URL where the key's directory is served; the header carries
    it as an sf-string and the signature covers that exact text and ``@authority``.
    """
    agent = sf_string(signature_agent)
    components = (("@authority", authority_of(url)), ("signature-agent", agent))
    sig_input, sig = _sign(key, components, created=created, expires=created + window,
                           tag=TAG_REQUEST)
    return {"Signature-Input": sig_input, "Signature": sig, "Signature-Agent": agent}


def sign_directory(key: SigningKey, authority: str, *, created: int,
                   window: int = DIRECTORY_WINDOW) -> tuple[bytes, dict[str, str]]:
    """A key directory for ``key`` served as ``authority``: (body, headers to send with it)."""
    sig_input, sig = _sign(key, (("@authority", authority.lower()),), created=created,
                           expires=created + window, tag=TAG_DIRECTORY)
    return directory_body([key.public_bytes]), {
        "Content-Type": DIRECTORY_MEDIA_TYPE, "Signature-Input": sig_input, "Signature": sig}


# -- parsing (this profile only) -----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SignatureEntry:
    """One labelled signature: its covered components, parameters, and their exact text."""

    label: str
    components: tuple[str, ...]
    params: Mapping[str, str | int | bool]
    params_text: str  # the received @signature-params value, parentheses included
    signature: str  # the base64 text between the colons


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by case-insensitive name (a plain dict or httpx/starlette headers)."""
    value = headers.get(name)
    if value is None:
        lowered = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == lowered), None)
    return value if isinstance(value, str) else None


def parse_signatures(headers: Mapping[str, str]) -> list[SignatureEntry]:
    """Every (Signature-Input, Signature) pair, labels matched one to one, or refuse."""
    sig_input, sig = header(headers, "signature-input"), header(headers, "signature")
    if sig_input is None and sig is None:
        raise Refused("wba-unsigned", "no Signature-Input or Signature header")
    if sig_input is None or sig is None:
        raise Refused("wba-malformed", "Signature-Input and Signature come together")
    if len(sig_input) > MAX_HEADER_CHARS or len(sig) > MAX_HEADER_CHARS:
        raise Refused("wba-malformed", f"a signature header over {MAX_HEADER_CHARS} characters")
    inputs, sigs = signature_input_members(sig_input), signature_members(sig)
    labels = [entry[0] for entry in inputs]
    by_label = dict(sigs)
    if len(set(labels)) != len(labels) or len(by_label) != len(sigs):
        raise Refused("wba-malformed", "a label appears twice")
    if set(by_label) != set(labels):
        raise Refused("wba-malformed", "the labels of Signature-Input and Signature differ")
    return [SignatureEntry(label, components, params, text, by_label[label])
            for label, components, params, text in inputs]


# -- verification -------------------------------------------------------------------------
def _covered(entry: SignatureEntry, *, tag: str, authority: str, headers: Mapping[str, str],
             now: int, max_lifetime: int) -> list[tuple[str, str]]:
    """The policy half of one entry (tag, alg, times, covered components): what it needs no
    key to judge. Returns the ``(name, value)`` pairs of its signature base, or refuses."""
    params = entry.params
    if params.get("tag") != tag:
        raise Refused("wba-wrong-tag", f"tag is {str(params.get('tag'))[:60]!r}, not {tag!r}")
    if "alg" in params and params["alg"] != ALG:
        raise Refused("wba-bad-alg", f"alg {str(params['alg'])[:40]!r} is not {ALG!r}")
    created, expires = params.get("created"), params.get("expires")
    if not isinstance(created, int) or isinstance(created, bool) \
            or not isinstance(expires, int) or isinstance(expires, bool):
        raise Refused("wba-malformed", "created and expires must be integers")
    if created > now + CLOCK_SKEW:
        raise Refused("wba-from-the-future", f"created {created - now} s ahead of our clock")
    if now >= expires:
        raise Refused("wba-expired", f"expired {now - expires} s ago")
    if expires <= created or expires - created > max_lifetime:
        raise Refused("wba-lifetime", f"a lifetime of {expires - created} s (at most "
                                      f"{max_lifetime})")
    if "@authority" not in entry.components:
        raise Refused("wba-no-authority", "@authority is not covered: the signature would "
                                          "hold at every origin")
    pairs: list[tuple[str, str]] = []
    for name in entry.components:
        if name != name.lower() or any(n == name for n, _ in pairs):
            raise Refused("wba-component", f"component {name[:60]!r} is uppercase or repeated")
        if name == "@authority":
            pairs.append((name, authority))
        elif name.startswith("@"):
            raise Refused("wba-component", f"derived component {name[:60]!r} is out of profile")
        else:
            value = header(headers, name)
            if value is None:
                raise Refused("wba-component", f"covered header {name[:60]!r} is absent")
            pairs.append((name, value.strip()))
    return pairs


def _check_entry(entry: SignatureEntry, *, public: bytes, tag: str, authority: str,
                 headers: Mapping[str, str], now: int, max_lifetime: int) -> None:
    """One entry under one key, policy first and Ed25519 last; refuses naming the rule."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from muretai_cli.seam._ed25519 import verify_strict

    pairs = _covered(entry, tag=tag, authority=authority, headers=headers, now=now,
                     max_lifetime=max_lifetime)
    try:
        key = Ed25519PublicKey.from_public_bytes(public)
    except ValueError:
        raise Refused("bad-jwk", "the key is not an Ed25519 point") from None
    verify_strict(key, public,
                  signature_base(pairs, entry.params_text), entry.signature)


def precheck_request(headers: Mapping[str, str], *, authority: str, now: int) -> None:
    """Refuse a signed request that no key could make valid: unparseable headers, or no
    ``web-bot-auth`` entry whose tag, alg, times and covered components hold for
    ``authority`` at ``now``. A verifier runs this before it fetches any key directory."""
    authority = authority.strip().lower()
    last: MuretaiError = Refused("wba-malformed", "no signature entry")
    for entry in parse_signatures(headers):
        try:
            _covered(entry, tag=TAG_REQUEST, authority=authority, headers=headers, now=now,
                     max_lifetime=MAX_REQUEST_LIFETIME)
            return
        except MuretaiError as exc:
            last = exc
    raise Refused(last.code, last.detail)


def _usable_keys(jwks: object) -> list[bytes]:
    keys = jwks.get("keys") if isinstance(jwks, dict) else None
    if not isinstance(keys, list):
        raise Refused("wba-bad-directory", "a key directory is an object with a keys list")
    usable = []
    for jwk in keys[:64]:
        try:
            usable.append(public_from_jwk(jwk))
        except MuretaiError:
            continue  # an unreadable or mis-spelled key names nobody
    return usable


def _verify(headers: Mapping[str, str], *, keys: list[bytes], authority: str, now: int,
            tag: str, max_lifetime: int, first: bool) -> list[str]:
    from muretai_cli.seam._didkey import did_from_public

    entries = parse_signatures(headers)
    authority = authority.strip().lower()
    if not authority:
        raise Refused("wba-malformed", "the verifier was given no authority")
    proven: list[str] = []
    last: MuretaiError | None = None
    for public in keys:
        keyid = jwk_thumbprint(public)
        for entry in entries:
            if entry.params.get("keyid") != keyid:
                continue
            try:
                _check_entry(entry, public=public, tag=tag, authority=authority,
                             headers=headers, now=now, max_lifetime=max_lifetime)
            except MuretaiError as exc:
                last = exc
                continue
            proven.append(did_from_public(public))
            if first:
                return proven
            break
    if not proven:
        if last is not None:
            raise Refused(last.code, last.detail)
        raise Refused("wba-unknown-key", "no signature names a key of the directory (keyid is "
                                         "the RFC 7638 thumbprint)")
    return proven


def verify_request(headers: Mapping[str, str], *, authority: str, jwks: object,
                   now: int) -> str:
    """The DID whose key (from ``jwks``, the caller's) signed this request for ``authority``."""
    return _verify(headers, keys=_usable_keys(jwks), authority=authority, now=now,
                   tag=TAG_REQUEST, max_lifetime=MAX_REQUEST_LIFETIME, first=True)[0]


def verify_directory(headers: Mapping[str, str], body: bytes, *, authority: str,
                     now: int) -> list[str]:
    """The DIDs a fetched key directory proves for ``authority`` (each key signed for it).

    A key listed without a signature over ``@authority`` by that same key proves nothing
    and is left out; none proven is a refusal.
    """
    media = (header(headers, "content-type") or "").split(";")[0].strip().lower()
    if media != DIRECTORY_MEDIA_TYPE:
        raise Refused("wba-bad-directory", f"served as {media[:80]!r}, not "
                                           f"{DIRECTORY_MEDIA_TYPE}")
    if len(body) > MAX_DIRECTORY_BYTES:
        raise Refused("wba-bad-directory", f"larger than {MAX_DIRECTORY_BYTES} bytes")
    try:
        doc = parse_document(body)
    except MuretaiError as exc:  # the one parse boundary: too deep is a reason, too
        raise Refused("wba-bad-directory", f"the body is not UTF-8 JSON ({exc.code})") from None
    return _verify(headers, keys=_usable_keys(doc), authority=authority, now=now,
                   tag=TAG_DIRECTORY, max_lifetime=MAX_DIRECTORY_LIFETIME, first=False)


def signature_agent_url(headers: Mapping[str, str]) -> str | None:
    """The URL a request's ``Signature-Agent`` sf-string names, or None (absent/malformed)."""
    value = header(headers, "signature-agent")
    if value is None:
        return None
    p = SfParser(value.strip(), "Signature-Agent")
    try:
        url = p.string()
    except MuretaiError:
        return None
    return url if p.i == len(p.s) else None
