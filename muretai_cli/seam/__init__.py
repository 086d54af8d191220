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
        MAX_SAFE_INT,
        canonical_bytes,
        canonical_from_json,
        check_signable,
        is_number_hazard,
        parse_document,
    )
    from muretai_cli.seam._cardpub import (
        ENVELOPE_MAX_AGE,
        ENVELOPE_MAX_AHEAD,
        card_envelope_payload,
        sign_card_envelope,
        verify_card_envelope,
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
    from muretai_cli.seam._envelope import (
        MESSAGE_WINDOW,
        SIGNED_FIELDS,
        check_fresh,
        check_signed_fields,
        sign_envelope,
        signing_payload,
        six_fields,
        timestamp_seconds,
        verify_envelope,
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
        MAX_DIRECTORY_BYTES,
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
    "b64decode_strict": "_b64", "b64encode": "_b64",
    "MAX_SAFE_INT": "_canonical", "canonical_bytes": "_canonical",
    "canonical_from_json": "_canonical", "check_signable": "_canonical",
    "parse_document": "_canonical", "is_number_hazard": "_canonical",
    "ENVELOPE_MAX_AGE": "_cardpub", "ENVELOPE_MAX_AHEAD": "_cardpub",
    "card_envelope_payload": "_cardpub", "sign_card_envelope": "_cardpub",
    "verify_card_envelope": "_cardpub",
    "enc_pub_from_seed": "_cryptobox", "open_box": "_cryptobox", "seal_box": "_cryptobox",
    "MAX_B58_LEN": "_didkey", "did_from_public": "_didkey", "public_from_did": "_didkey",
    "verifying_key_from_did": "_didkey", "x25519_from_ed25519_public": "_didkey",
    "SigningKey": "_ed25519", "verify_signature": "_ed25519",
    "MESSAGE_WINDOW": "_envelope", "SIGNED_FIELDS": "_envelope", "check_fresh": "_envelope",
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
    "MAX_DIRECTORY_BYTES": "_wba",
    "jwk_from_public": "_wba", "jwk_thumbprint": "_wba", "precheck_request": "_wba",
    "sign_directory": "_wba",
    "sign_request": "_wba", "signature_agent_url": "_wba", "verify_directory": "_wba",
    "verify_request": "_wba",
}

__all__ = [
    "DID_CONFIGURATION_PATH",
    "DIRECTORY_MEDIA_TYPE",
    "DIRECTORY_PATH",
    "ENVELOPE_MAX_AGE",
    "ENVELOPE_MAX_AHEAD",
    "MAX_B58_LEN",
    "MAX_DIRECTORY_BYTES",
    "MAX_SAFE_INT",
    "MESSAGE_WINDOW",
    "SIGNED_FIELDS",
    "SMALL_ORDER_ENCODINGS",
    "DomainLink",
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
    "is_number_hazard",
    "is_small_order",
    "jwk_from_public",
    "jwk_thumbprint",
    "linked_did",
    "listen_token_payload",
    "open_box",
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
