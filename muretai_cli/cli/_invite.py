"""``muretai invite create|list|revoke|verify`` and ``muretai join``: meeting through an invite."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Annotated

import typer

from muretai_cli.cli._acting import AsOpt, DbOpt, KeysOpt, load_identity
from muretai_cli.cli._door import open_store
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe
from muretai_cli.cli._visitout import (
    DEFAULT_MAX_BYTES,
    MaxBytesOpt,
    TimeoutOpt,
    progress,
)

if TYPE_CHECKING:
    from muretai_cli.artifacts.invite import Invite

app = typer.Typer(no_args_is_help=True, help="Invite someone: a signed card they answer with "
                                             "a claim, after which each holds the other.")

InviteArg = Annotated[str, typer.Argument(
    help="The invite: its muretai:invite:… text, its link (https://HOST/invitation#d=… or "
         "agent://invite?d=…), a file holding one of them (or its JSON), or -.")]
NowOpt = Annotated[int | None, typer.Option(
    "--now", help="Judge at this epoch second instead of the clock.", show_default=False)]


def _clock(now: int | None) -> int:
    return int(time.time()) if now is None else now


def _read(arg: str) -> object:
    """The invite an argument names: pasted text, a file, or stdin."""
    from muretai_cli.artifacts.invite import INVITE_PREFIX, MAX_INVITE_TEXT, read_invite
    from muretai_cli.cli._input import read_input

    if arg.startswith(INVITE_PREFIX) or "://" in arg:  # pasted text or a link, not a file
        return read_invite(arg)
    return read_invite(read_input(arg, limit=MAX_INVITE_TEXT))


def _describe(invite: Invite) -> str:
    where = ", ".join(f"{k} {safe(v)}" for k, v in (("door", invite.url),
                                                    ("relay", invite.relay)) if v)
    return f"{invite.did} ({safe(invite.name)!r}) via {where or 'no address'}"


@app.command("create")
def create(
    as_: AsOpt = None,
    ttl: Annotated[str, typer.Option("--ttl", help="How long it stays valid (7d, 12h, …).")
                   ] = "7d",
    uses: Annotated[int, typer.Option("--uses", min=1, help="How many people may use it.")
                    ] = 1,
    name: Annotated[str | None, typer.Option("--name", help="The name it shows (default: the "
                                             "identity's).", show_default=False)] = None,
    url: Annotated[str | None, typer.Option("--url", help="Your door's public base URL.",
                                            show_default=False)] = None,
    relay: Annotated[str | None, typer.Option("--relay", help="Your relay's base URL "
                                              "(default: the identity's, from id relay).",
                                              show_default=False)] = None,
    db: DbOpt = None,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Sign an invite card (a fresh 128-bit nonce) and keep its nonce, uses and expiry.

    Prints the card's JSON, its one-line paste form muretai:invite:… and its link form
    agent://invite?d=… (either is what `join` / `invite accept` take).
    """
    from muretai_cli.artifacts.invite import invite_link, invite_text, mint_invite
    from muretai_cli.cli._durations import parse_duration
    from muretai_cli.inbox.invites import InviteStore
    from muretai_cli.urls import parse_base_url

    ident = load_identity(as_, keys)
    key = ident.signing_key()
    now = int(time.time())
    exp = now + parse_duration(ttl, name="--ttl")
    from muretai_cli.home import Profiles

    door = parse_base_url(url).text if url else ""
    relay_url = parse_base_url(relay).text if relay else None
    if not door and relay_url is None:
        relay_url = Profiles().relay_of(ident.did)  # `id new --relay` / `id relay`
    card = mint_invite(key, name=name or ident.name, exp=exp, url=door, relay=relay_url,
                       enc_pub=key.enc_pub)
    store = open_store(ident, db)
    try:
        row = InviteStore(store.db).add(card, uses=uses, exp=exp, now=now)
    finally:
        store.close()
    text, link = invite_text(card), invite_link(card)
    if json_out:
        emit_json({"ok": True, "invite": card, "text": text, "link": link,
                   **row.to_json(now)})
        return
    say(json.dumps(card, ensure_ascii=False))
    say(text)
    say(link)
    note(f"invite {row.nonce}: {uses} use(s), expires {card['exp']}")


@app.command("list")
def list_(as_: AsOpt = None, all_: Annotated[bool, typer.Option(
        "--all", help="Also those expired, used up or revoked.")] = False,
          db: DbOpt = None, keys: KeysOpt = None, json_out: JsonOpt = False) -> None:
    """The invites you issued that can still be used: nonce, uses left, expiry."""
    from muretai_cli.inbox.invites import InviteStore

    ident = load_identity(as_, keys)
    store = open_store(ident, db)
    try:
        rows = InviteStore(store.db).invites()
    finally:
        store.close()
    now = int(time.time())
    shown = [r for r in rows if all_ or r.state(now) == "live"]
    if json_out:
        emit_json({"ok": True, "as": ident.name, "invites": [r.to_json(now) for r in shown]})
        return
    for r in shown:
        say(f"{r.nonce}\t{r.state(now)}\t{max(0, r.uses - r.used)} left\t"
            f"{r.card.get('exp')}\t{safe(r.card.get('name'))}")
    if not shown:
        note(f"{ident.name} has no live invites")


@app.command("revoke")
def revoke(nonce: Annotated[str, typer.Argument(help="The invite's nonce.")],
           as_: AsOpt = None, db: DbOpt = None, keys: KeysOpt = None,
           json_out: JsonOpt = False) -> None:
    """Revoke an invite: a claim presenting its nonce is refused from now on."""
    from muretai_cli.inbox.invites import InviteStore

    ident = load_identity(as_, keys)
    store = open_store(ident, db)
    try:
        row = InviteStore(store.db).revoke(nonce, int(time.time()))
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, **row.to_json(int(time.time()))})
        return
    say(f"{row.nonce}\trevoked")


@app.command("contacts")
def contacts(as_: AsOpt = None, db: DbOpt = None, keys: KeysOpt = None,
             json_out: JsonOpt = False) -> None:
    """Who you met through invites (either way): DID, the name they gave, their addresses."""
    from muretai_cli.inbox.invites import InviteStore

    ident = load_identity(as_, keys)
    store = open_store(ident, db)
    try:
        rows = InviteStore(store.db).contacts()
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "as": ident.name, "contacts": [c.to_json() for c in rows]})
        return
    for c in rows:
        where = c.url or c.relay or "-"
        say(f"{c.did}\t{safe(c.name)!r} (their words)\t{safe(where)}\t{c.how}")
    if not rows:
        note(f"{ident.name} has met no one through an invite yet")


@app.command("verify")
def verify(invite: InviteArg, now: NowOpt = None, json_out: JsonOpt = False) -> None:
    """Check an invite offline: the signature under the DID it names, and its expiry."""
    from muretai_cli.artifacts.invite import verify_invite

    got = verify_invite(_read(invite), now=_clock(now))
    if json_out:
        emit_json({"ok": True, "did": got.did, "name": got.name, "url": got.url or None,
                   "relay": got.relay, "encPub": got.enc_pub, "nonce": got.nonce,
                   "exp": got.exp})
        return
    say(f"ok    invite from {_describe(got)}, expires {got.card.get('exp')}")


def join(
    invite: InviteArg,
    as_: AsOpt = None,
    message: Annotated[str | None, typer.Option("--message", help="A first message to send "
                                                "once the claim is accepted.",
                                                show_default=False)] = None,
    name: Annotated[str | None, typer.Option("--name", help="The name you give (default: "
                                             "your identity's).", show_default=False)] = None,
    db: DbOpt = None,
    timeout: TimeoutOpt = "30",
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Answer an invite: verify it, keep the inviter as a contact, send the signed claim."""
    from muretai_cli.cli._durations import parse_seconds
    from muretai_cli.cli._visitout import client_for
    from muretai_cli.home import Profiles
    from muretai_cli.visit.join import Joiner, join_invite

    now = int(time.time())
    doc = _read(invite)
    ident = load_identity(as_, keys)
    key = ident.signing_key()
    store = open_store(ident, db)
    try:
        joiner = Joiner(key, name or ident.name, store, client_for, now,
                        my_relay=Profiles().relay_of(ident.did),
                        timeout=parse_seconds(timeout), max_bytes=max_bytes, on_note=note)
        with progress("answering the invite"):
            joined = join_invite(joiner, doc, message=message)
    finally:
        store.close()
    got, out = joined.invite, joined.doc
    if json_out:
        emit_json(out)
    elif joined.by_door:
        say(f"joined {_describe(got)}: the door accepted the claim")
        if "message" in out:
            verdict = "delivered, reply verified" if out["ok"] else "sent; reply NOT verified"
            say(f"message {verdict}")
    else:  # both only queued: nothing is known of the inviter's verdict yet
        say(f"claim queued for {_describe(got)}: the inviter judges it at its next "
            "turn-check")
        if "message" in out:
            state = str(out["message"].get("state"))
            say(_MESSAGE_STATES.get(state, f"message {safe(state)}"))
    if not out["ok"]:
        raise typer.Exit(1)


_MESSAGE_STATES = {"queued": "message queued after it (read at the same turn-check)",
                   "delivered": "message delivered, reply verified",
                   "held": "message held for the inviter's approval"}


def register(root: typer.Typer) -> None:
    app.command("accept", help="Join through an invite (the same as `muretai join`).")(join)
    root.add_typer(app, name="invite")


def register_join(root: typer.Typer) -> None:
    root.command("join")(join)

