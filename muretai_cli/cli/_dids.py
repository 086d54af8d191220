"""A DID option: a did:key as typed, or a name for one (your identities, trusted orgs,
the names you gave your contacts: ``op contact name``), resolved and said on stderr; a bad
one is a usage error naming the option."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from muretai_cli.cli._out import note
from muretai_cli.cli._text import safe
from muretai_cli.errors import InputError, MuretaiError

if TYPE_CHECKING:
    from muretai_cli.inbox.store import IdentityStore


def did_option(value: str, name: str, *, keys: Path | None = None,
               store: IdentityStore | None = None) -> str:
    """A DID the user typed, or a name for one: one of your identities (in ``keys``), an
    org on your trust list, or (given the acting identity's ``store``) the name you gave a
    contact (``op contact name``; never one a peer gave itself), resolved and said on
    stderr. A malformed DID or an unknown name is a usage error (exit 2 ``bad-did``)
    naming the option, never a refusal from a peer."""
    from muretai_cli.seam import public_from_did

    if not value.startswith("did:"):
        return _did_named(value, name, keys, store)
    try:
        public_from_did(value)
    except MuretaiError as exc:
        raise InputError("bad-did", f"{name} {safe(value, limit=120)!r} is not a did:key: "
                                    f"{exc.detail}", hint="a did:key looks like did:key:z6Mk…"
                         ) from None
    return value


def _did_named(value: str, name: str, keys: Path | None, store: IdentityStore | None) -> str:
    from muretai_cli.home import dids_named, keys_dir

    found = dids_named(value, keys_dir(keys))
    if store is not None:  # the owner's names for its contacts (never a name a peer gave)
        row = store.book_named(value)
        if row is not None and row.did not in {did for did, _ in found}:
            found.append((row.did, f"your contact {row.name}"))
    shown = safe(value, limit=120)
    if not found:
        raise InputError("bad-did", f"{name} {shown!r} is neither a did:key nor a name this "
                                    "machine knows",
                         hint="give a did:key (did:key:z6Mk…), one of your identities "
                              "(`muretai id list`), a trusted org (`muretai org list`) or a "
                              "contact you named (`muretai op connections`)")
    if len(found) > 1:
        raise InputError("ambiguous-name", f"{name} {shown!r} names {len(found)} DIDs: " +
                         "; ".join(f"{what}: {did}" for did, what in found),
                         hint="give the DID itself")
    did, what = found[0]
    note(f"{name} {shown} = {did} ({safe(what, limit=120)})")
    return did


def named(did: str, name: str | None) -> str:
    """A DID for people, with the owner's name for it beside it (when it has one)."""
    shown = safe(did, limit=120)
    return f"{shown} ({safe(name, limit=80)})" if name else shown


def contact_names(store: IdentityStore) -> dict[str, str]:
    """DID -> the owner's name (``op contact name``), for every named contact."""
    return {r.did: r.name for r in store.book_rows() if r.name}


def did_opt(flag: str, help: str) -> Any:
    """A ``typer.Option`` whose value reaches the command already resolved by
    ``did_option``: the command gets the DID, never the name, so it cannot check the name."""
    return typer.Option(flag, help=f"{help} A did:key or a name for one.",
                        metavar="DID|NAME", callback=_resolved_did)


def _resolved_did(ctx: typer.Context, param: typer.CallbackParam,
                  value: str | None) -> str | None:
    if value is None or ctx.resilient_parsing:
        return value
    from muretai_cli.cli._tree import JSON_META

    # Parsed before the command runs: the root, rendering a refusal, must know the format
    # now (--json is eager, so it is parsed already).
    ctx.meta[JSON_META] = bool(ctx.params.get("json_out"))
    return did_option(value, param.opts[0])
