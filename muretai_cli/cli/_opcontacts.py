"""``op --as ME connections``, ``op --as ME contact name|unname`` and ``invite contacts``:
the contact book (``inbox.contacts``) as one list, and the owner's names for its peers."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._dids import did_option, named
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe
from muretai_cli.cli._visitout import quoted

if TYPE_CHECKING:
    from muretai_cli.inbox.store import IdentityStore


def connections(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Every contact, however met (invite, grant, approval, exchange): the name you gave
    it, how it is reached (door URL, or relay and enc_pub) and where that came from, with
    the last message either way."""
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.cli._opdoor import CHECKED, op_store
    from muretai_cli.inbox.connections import connection_rows

    ident = op_identity(ctx)
    store = op_store(ctx)
    try:
        rows = connection_rows(ident.did, store)
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "as": ident.name, "did": ident.did, "connections": rows})
        return
    for row in rows:
        reach = row["reach"] or {}
        via = reach.get("door") or reach.get("relay") or "-"
        where = reach.get("doorFrom") or reach.get("relayFrom")
        mark = f"  {CHECKED}" if row["checkedOutOfBand"] else ""
        say(f"{named(row['did'], row['name'])}  {row['reachedBy'] or 'not reachable yet'}  "
            f"{safe(via, limit=200)}" + (f" (from {safe(where)})" if where else "")
            + f"  met by {', '.join(row['sources']) or '-'}{mark}")
        last = row.get("lastMessage")
        if last:
            arrow = "<-" if last["direction"] == "in" else "->"
            say(f"  last {arrow} {safe(last['channel'])}")
            for line in quoted(last["text"], indent="    ", limit=200):
                say(line)
    if not rows:
        note(f"{ident.name} has no connections yet")


NameArg = Annotated[str, typer.Argument(metavar="NAME", help="Your name for the peer: 1-64 of "
                                        "A-Z a-z 0-9 . _ -.")]


def contact_name(
    ctx: typer.Context,
    did: Annotated[str, typer.Argument(metavar="DID", help="The peer's DID (or the name you "
                                       "gave it, to rename it).")],
    name: NameArg,
    json_out: JsonOpt = False,
) -> None:
    """Give a peer your name for it: it then works wherever a peer's DID is expected, and
    is shown beside the DID. Refused (exit 1) when it already stands for another DID or is
    one of your identities' (or trusted orgs') names."""
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.cli._opdoor import op_store
    from muretai_cli.home import keys_dir
    from muretai_cli.inbox.contacts import ContactBook, check_contact_name

    check_contact_name(name)
    ident = op_identity(ctx)
    store = op_store(ctx)
    try:
        did = did_option(did, "DID", store=store)
        obj = ctx.find_object(dict) or {}
        changed = ContactBook(ident.did, store).name(did, name, int(time.time()),
                                                     keys=keys_dir(obj.get("keys")))
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "as": ident.name, "did": did, "name": name,
                   "changed": changed})
    else:
        say(f"named {named(did, name)}")


def contact_unname(ctx: typer.Context, name: NameArg, json_out: JsonOpt = False) -> None:
    """Take your name off a peer (the contact stays, known by its DID)."""
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.cli._opdoor import op_store
    from muretai_cli.inbox.contacts import ContactBook

    ident = op_identity(ctx)
    store = op_store(ctx)
    try:
        did = ContactBook(ident.did, store).unname(name)
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "as": ident.name, "did": did, "name": None, "unnamed": name})
    else:
        say(f"unnamed {safe(did, limit=120)} (was {safe(name, limit=80)})")


def invite_contacts(store: IdentityStore, did: str) -> list[dict[str, Any]]:
    """The contacts met through an invite (either way): the book's, filtered, with the name
    each gave itself (``name``: their words, never a name of yours) and yours (``ownName``)."""
    from muretai_cli.inbox.contacts import ContactBook
    from muretai_cli.inbox.invites import InviteStore

    book = {c.did: c for c in ContactBook(did, store).all() if "invite" in c.sources}
    out = []
    for met in InviteStore(store.db).contacts():
        contact = book.get(met.did)
        out.append({**met.to_json(), "ownName": contact.name if contact else None})
    return out


def register(op_app: typer.Typer, contact_app: typer.Typer) -> None:
    op_app.command("connections")(connections)
    contact_app.command("list", help="Alias of `op connections`.")(connections)
    contact_app.command("name")(contact_name)
    contact_app.command("unname")(contact_unname)
