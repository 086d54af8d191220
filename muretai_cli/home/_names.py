"""Names a person types where a DID is expected: one of your identities, or an org you trust."""

from __future__ import annotations

from pathlib import Path

from muretai_cli.errors import MuretaiError
from muretai_cli.home._keys import KeyStore
from muretai_cli.home._trust import TrustList


def dids_named(name: str, keys: Path) -> list[tuple[str, str]]:
    """Each distinct ``(DID, what it is)`` this machine knows by ``name``: an identity in
    ``keys`` (its public DID; a key file with loose permissions still names it), then the
    trust list's orgs of that name (case-insensitive)."""
    found: dict[str, str] = {}
    store = KeyStore(keys)
    try:
        if store.path_of(name).exists():
            found[store.load(name, allow_loose=True).did] = f"your identity {name}"
    except MuretaiError:
        pass  # not a valid identity name, or an unreadable file: not a name we know
    for org in TrustList().all():
        if org.name.casefold() == name.casefold():
            found.setdefault(org.did, f"trusted org {org.name}")
    return list(found.items())
