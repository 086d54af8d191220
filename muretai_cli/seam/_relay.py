"""Relay bytes (seam §10): the deposit signature and the listen token.

Both are Ed25519 over plain UTF-8 strings, not canonical JSON:

- a deposit is signed by its sender over ``to|from|id|blob``;
- a listener proves it holds a DID's key with a token over
  ``listen:<did>:<minute>:<origin>``, ``minute = floor(unix / 60)`` and ``origin`` the
  relay's canonical origin (``urls.parse_base_url(url).origin``), so one relay has one
  spelling and a token for one relay is worthless at another.
"""

from __future__ import annotations

import re

from muretai_cli.errors import Refused
from muretai_cli.seam._ed25519 import SigningKey, verify_signature

RELAY_SEP = "|"
# What a canonical origin looks like: lowercase scheme and host, no path, no default port.
# Canonicalising is urls.py's job; this only refuses a caller who skipped it.
_ORIGIN = re.compile(r"(https?)://([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::([0-9]{1,5}))?")
_DEFAULT_PORT = {"http": "80", "https": "443"}


def relay_send_payload(to: str, sender: str, deposit_id: str, blob: str) -> bytes:
    """UTF-8 of ``to|from|id|blob``: what a deposit's ``sig`` covers.

    ``to``, ``from`` and ``blob`` may not contain ``|`` (DIDs and base64 never do), so the
    join is one-to-one even when an ``id`` does.
    """
    for name, value in (("to", to), ("from", sender), ("id", deposit_id), ("blob", blob)):
        if not isinstance(value, str):
            raise Refused("malformed-deposit", f"{name} must be a string")
    if RELAY_SEP in to or RELAY_SEP in sender or RELAY_SEP in blob:
        raise Refused("malformed-deposit", "to, from and blob never contain '|'")
    return RELAY_SEP.join((to, sender, deposit_id, blob)).encode("utf-8")


def sign_relay_send(key: SigningKey, *, to: str, deposit_id: str, blob: str) -> str:
    """The ``sig`` of a deposit from ``key`` (strict base64)."""
    return key.sign(relay_send_payload(to, key.did, deposit_id, blob))


def verify_relay_send(*, to: str, sender: str, deposit_id: str, blob: str,
                      sig: object) -> None:
    """Verify a deposit's ``sig`` under ``sender`` with the strict rules, or refuse."""
    verify_signature(sender, relay_send_payload(to, sender, deposit_id, blob), sig)


def _check_origin(origin: object) -> str:
    match = _ORIGIN.fullmatch(origin) if isinstance(origin, str) else None
    if match is None or match.group(3) == _DEFAULT_PORT[match.group(1)]:
        raise Refused("bad-origin", f"{str(origin)[:100]!r} is not a canonical origin "
                                    "(scheme://host[:port], lowercase, no path)")
    return match.group(0)


def listen_token_payload(did: str, minute: int, origin: str) -> bytes:
    """UTF-8 of ``listen:<did>:<minute>:<origin>``: what a listen token covers."""
    if not isinstance(did, str):
        raise Refused("bad-did", "a DID is a string")
    if not isinstance(minute, int) or isinstance(minute, bool) or minute < 0:
        raise Refused("bad-minute", "minute is a non-negative integer (floor(unix / 60))")
    return f"listen:{did}:{minute}:{_check_origin(origin)}".encode()


def sign_listen_token(key: SigningKey, *, minute: int, origin: str) -> str:
    """A listen token for ``key``'s DID at ``origin`` for ``minute``."""
    return key.sign(listen_token_payload(key.did, minute, origin))


def verify_listen_token(*, did: str, minute: int, token: object, origin: str) -> None:
    """Verify a listen token under ``did`` (strict Ed25519), or refuse.

    Whether ``minute`` is close enough to now is the relay's rule, not the bytes'.
    """
    verify_signature(did, listen_token_payload(did, minute, origin), token)
