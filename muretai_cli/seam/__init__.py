"""The seam: the bytes muretai must reproduce, and refuse, byte for byte.

Canonical JSON and its parse boundary, did:key, strict base64, strict Ed25519, the
six-field message envelope and the signed card envelope, sealed boxes and the relay's
signed bytes. Nothing here does I/O.

Names load on first use, so a command that only decodes a DID never imports the crypto
backend (start-up time is a feature of a command-line tool).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from muretai_cli.seam._b64 import b64decode_strict, b64encode
    from muretai_cli.seam._canonical import (
        canonical_bytes,
        canonical_from_json,
        check_signable,
        is_number_hazard,
        parse_document,
    )
    from muretai_cli.seam._cardpub import (
        Freshness,
        SignedCard,
        card_envelope_payload,
        envelope_freshness,
        open_card_envelope,
        sign_card_envelope,
        verify_card_envelope,
        verify_served_card,
    )
    from muretai_cli.seam._cryptobox import enc_pub_from_seed, open_box, seal_box
    from muretai_cli.seam._didkey import (
        MAX_B58_LEN,
        did_from_public,
        public_from_did,
        verifying_key_from_did,
        x25519_from_ed25519_public,
    )
    from muretai_cli.seam._domainlink import (
        DID_CONFIGURATION_PATH,
        DomainLink,
        did_configuration,
        domain_linkage_signing_input,
        linked_did,
        sign_domain_linkage,
        verify_domain_linkage,
    )
    from muretai_cli.seam._ed25519 import SigningKey, verify_signature
    from muretai_cli.seam._encpub import ENC_PUB_CHARS, is_enc_pub
    from muretai_cli.seam._envelope import (
        SIGNED_FIELDS,
        check_fresh,
        check_signed_fields,
        sign_envelope,
        signing_payload,
        six_fields,
        timestamp_seconds,
        verify_envelope,
    )
    from muretai_cli.seam._limits import (
        ARTIFACT_IAT_SKEW,
        CLOCK_SKEW,
        DIRECTORY_WINDOW,
        ENVELOPE_MAX_AGE,
        ENVELOPE_MAX_AHEAD,
        INTRO_REQUEST_WINDOW,
        MAX_BLOB_CHARS,
        MAX_BODY,
        MAX_DEPTH,
        MAX_DIRECTORY_BYTES,
        MAX_DIRECTORY_LIFETIME,
        MAX_HEADER_CHARS,
        MAX_ID_LEN,
        MAX_LINKED_DIDS,
        MAX_REQUEST_LIFETIME,
        MAX_SAFE_INT,
        MAX_SAME_ISSUER,
        MAX_TEXT,
        MAX_TOKEN_CHARS,
        MAX_VC_CHARS,
        MESSAGE_WINDOW,
        RELAYED_MAX_AGE,
        REQUEST_WINDOW,
    )
    from muretai_cli.seam._relay import (
        listen_token_payload,
        relay_send_payload,
        sign_listen_token,
        sign_relay_send,
        verify_listen_token,
        verify_relay_send,
    )
    from muretai_cli.seam._smallorder import SMALL_ORDER_ENCODINGS, is_small_order
    from muretai_cli.seam._wba import (
        DIRECTORY_MEDIA_TYPE,
        DIRECTORY_PATH,
        authority_of,
        jwk_from_public,
        jwk_thumbprint,
        precheck_request,
        sign_directory,
        sign_request,
        signature_agent_url,
        verify_directory,
        verify_request,
    )

_WHERE = {
    "ENC_PUB_CHARS": "_encpub", "is_enc_pub": "_encpub",
    "b64decode_strict": "_b64", "b64encode": "_b64",
    "canonical_bytes": "_canonical",
    "canonical_from_json": "_canonical", "check_signable": "_canonical",
    "parse_document": "_canonical", "is_number_hazard": "_canonical",
    "card_envelope_payload": "_cardpub", "sign_card_envelope": "_cardpub",
    "verify_card_envelope": "_cardpub", "open_card_envelope": "_cardpub",
    "SignedCard": "_cardpub", "Freshness": "_cardpub",
    "envelope_freshness": "_cardpub", "verify_served_card": "_cardpub",
    "enc_pub_from_seed": "_cryptobox", "open_box": "_cryptobox", "seal_box": "_cryptobox",
    "MAX_B58_LEN": "_didkey", "did_from_public": "_didkey", "public_from_did": "_didkey",
    "verifying_key_from_did": "_didkey", "x25519_from_ed25519_public": "_didkey",
    "SigningKey": "_ed25519", "verify_signature": "_ed25519",
    "SIGNED_FIELDS": "_envelope", "check_fresh": "_envelope",
    "sign_envelope": "_envelope", "check_signed_fields": "_envelope",
    "timestamp_seconds": "_envelope",
    "signing_payload": "_envelope", "six_fields": "_envelope", "verify_envelope": "_envelope",
    "listen_token_payload": "_relay", "relay_send_payload": "_relay",
    "sign_listen_token": "_relay", "sign_relay_send": "_relay",
    "verify_listen_token": "_relay", "verify_relay_send": "_relay",
    "SMALL_ORDER_ENCODINGS": "_smallorder", "is_small_order": "_smallorder",
    "DID_CONFIGURATION_PATH": "_domainlink", "DomainLink": "_domainlink",
    "did_configuration": "_domainlink", "domain_linkage_signing_input": "_domainlink",
    "linked_did": "_domainlink", "sign_domain_linkage": "_domainlink",
    "verify_domain_linkage": "_domainlink",
    "DIRECTORY_MEDIA_TYPE": "_wba", "DIRECTORY_PATH": "_wba", "authority_of": "_wba",
    "jwk_from_public": "_wba", "jwk_thumbprint": "_wba", "precheck_request": "_wba",
    "sign_directory": "_wba",
    "sign_request": "_wba", "signature_agent_url": "_wba", "verify_directory": "_wba",
    "verify_request": "_wba",
    "ARTIFACT_IAT_SKEW": "_limits",
    "CLOCK_SKEW": "_limits",
    "DIRECTORY_WINDOW": "_limits",
    "ENVELOPE_MAX_AGE": "_limits",
    "ENVELOPE_MAX_AHEAD": "_limits",
    "MAX_BLOB_CHARS": "_limits",
    "MAX_BODY": "_limits",
    "MAX_DEPTH": "_limits",
    "MAX_DIRECTORY_BYTES": "_limits",
    "INTRO_REQUEST_WINDOW": "_limits",
    "MAX_DIRECTORY_LIFETIME": "_limits",
    "MAX_HEADER_CHARS": "_limits",
    "MAX_ID_LEN": "_limits",
    "MAX_LINKED_DIDS": "_limits",
    "MAX_REQUEST_LIFETIME": "_limits",
    "MAX_SAFE_INT": "_limits",
    "MAX_SAME_ISSUER": "_limits",
    "MAX_TEXT": "_limits",
    "MAX_TOKEN_CHARS": "_limits",
    "MAX_VC_CHARS": "_limits",
    "MESSAGE_WINDOW": "_limits",
    "RELAYED_MAX_AGE": "_limits",
    "REQUEST_WINDOW": "_limits",
}

__all__ = [
    "ARTIFACT_IAT_SKEW",
    "CLOCK_SKEW",
    "DID_CONFIGURATION_PATH",
    "DIRECTORY_MEDIA_TYPE",
    "DIRECTORY_PATH",
    "DIRECTORY_WINDOW",
    "ENC_PUB_CHARS",
    "ENVELOPE_MAX_AGE",
    "ENVELOPE_MAX_AHEAD",
    "INTRO_REQUEST_WINDOW",
    "MAX_B58_LEN",
    "MAX_BLOB_CHARS",
    "MAX_BODY",
    "MAX_DEPTH",
    "MAX_DIRECTORY_BYTES",
    "MAX_DIRECTORY_LIFETIME",
    "MAX_HEADER_CHARS",
    "MAX_ID_LEN",
    "MAX_LINKED_DIDS",
    "MAX_REQUEST_LIFETIME",
    "MAX_SAFE_INT",
    "MAX_SAME_ISSUER",
    "MAX_TEXT",
    "MAX_TOKEN_CHARS",
    "MAX_VC_CHARS",
    "MESSAGE_WINDOW",
    "RELAYED_MAX_AGE",
    "REQUEST_WINDOW",
    "SIGNED_FIELDS",
    "SMALL_ORDER_ENCODINGS",
    "DomainLink",
    "Freshness",
    "SignedCard",
    "SigningKey",
    "authority_of",
    "b64decode_strict",
    "b64encode",
    "canonical_bytes",
    "canonical_from_json",
    "card_envelope_payload",
    "check_fresh",
    "check_signable",
    "check_signed_fields",
    "did_configuration",
    "did_from_public",
    "domain_linkage_signing_input",
    "enc_pub_from_seed",
    "envelope_freshness",
    "is_enc_pub",
    "is_number_hazard",
    "is_small_order",
    "jwk_from_public",
    "jwk_thumbprint",
    "linked_did",
    "listen_token_payload",
    "open_box",
    "open_card_envelope",
    "parse_document",
    "precheck_request",
    "public_from_did",
    "relay_send_payload",
    "seal_box",
    "sign_card_envelope",
    "sign_directory",
    "sign_domain_linkage",
    "sign_envelope",
    "sign_listen_token",
    "sign_relay_send",
    "sign_request",
    "signature_agent_url",
    "signing_payload",
    "six_fields",
    "timestamp_seconds",
    "verify_card_envelope",
    "verify_directory",
    "verify_domain_linkage",
    "verify_envelope",
    "verify_listen_token",
    "verify_relay_send",
    "verify_request",
    "verify_served_card",
    "verify_signature",
    "verifying_key_from_did",
    "x25519_from_ed25519_public",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'muretai_cli.seam' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"muretai_cli.seam.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
