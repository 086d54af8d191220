"""``op --as NAME inbox | requests | senders``: the owner's side of the door.

These work on the door's database directly; the door need not be running (WAL lets both
use it at once). Everything a sender wrote is untrusted and printed through ``safe()``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._out import (
    JsonOpt,
    did_option,
    emit_json,
    handles_errors,
    note,
    safe,
    say,
    when,
)
from muretai_cli.cli._visitout import quoted

if TYPE_CHECKING:
    from muretai_cli.inbox.store import DoorStore

requests_app = typer.Typer(help="Held first contacts: list, approve, reject.",
                           invoke_without_command=True)
senders_app = typer.Typer(help="Allow and block lists.", invoke_without_command=True)


def _store(ctx: typer.Context) -> DoorStore:
    from muretai_cli.cli._door import open_store
    from muretai_cli.cli._op import op_db, op_identity

    return open_store(op_identity(ctx), op_db(ctx))


def register(op_app: typer.Typer) -> None:
    """Add the owner's commands to the ``op`` group."""
    op_app.command("inbox")(inbox)
    op_app.add_typer(requests_app, name="requests")
    op_app.add_typer(senders_app, name="senders")


@handles_errors
def inbox(
    ctx: typer.Context,
    all_: Annotated[bool, typer.Option("--all", help="Everything, not the newest 20.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Accepted messages, newest first: arrival time, sender, verified flag, conversation
    (and when you approved a held first contact), then the text."""
    store = _store(ctx)
    try:
        rows = store.inbox(None if all_ else 20)
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "messages": rows})
        return
    for m in rows:
        flag = "verified" if m["verified"] else "UNVERIFIED"
        ctx_id = safe(m["contextId"], limit=80) if m["contextId"] else "-"
        approved = f"  approved {when(m['approved'])}" if m.get("approved") else ""
        say(f"{when(m['received'])}  {safe(m['from'], limit=120)}  {flag}  conversation "
            f"{ctx_id}{approved}")
        for line in quoted(m["text"], limit=2000):
            say(line)
    if not rows:
        note("the inbox is empty")


def _print_requests(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        say(f"{r['id']}  {when(r['received'])}  {safe(r['from'], limit=120)}  {r['status']}")
        for line in quoted(r["text"], limit=500):
            say(line)


@requests_app.callback()
def _requests(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        ctx.invoke(requests_list, ctx=ctx, json_out=False)


@requests_app.command("list")
@handles_errors
def requests_list(
    ctx: typer.Context,
    all_: Annotated[bool, typer.Option("--all", help="Decided ones too.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Held first contacts, oldest first."""
    store = _store(ctx)
    try:
        rows = store.requests(all_=all_)
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "requests": rows})
        return
    _print_requests(rows)
    if not rows:
        note("no held requests")


@requests_app.command("approve")
@handles_errors
def requests_approve(
    ctx: typer.Context,
    request_id: Annotated[str, typer.Argument(metavar="ID")],
    json_out: JsonOpt = False,
) -> None:
    """Deliver the held message to the inbox and let that sender through from now on."""
    store = _store(ctx)
    try:
        out = store.approve(request_id, int(time.time()))
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, **out})
    else:
        say(f"approved {out['id']} from {safe(out['from'])}")


@requests_app.command("reject")
@handles_errors
def requests_reject(
    ctx: typer.Context,
    request_id: Annotated[str, typer.Argument(metavar="ID")],
    block: Annotated[bool, typer.Option("--block", help="Also block the sender.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Drop the held message; the sender is refused until it redeems a new grant."""
    store = _store(ctx)
    try:
        out = store.reject(request_id, int(time.time()), block=block)
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, **out})
    else:
        say(f"rejected {out['id']} from {safe(out['from'])}" + (" (blocked)" if block else ""))


@senders_app.callback()
def _senders(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        ctx.invoke(senders_list, ctx=ctx, json_out=False)


@senders_app.command("list")
@handles_errors
def senders_list(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Senders with a standing: allowed, blocked, approved, rejected."""
    store = _store(ctx)
    try:
        rows = store.senders()
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "senders": rows})
        return
    for s in rows:
        say(f"{s['status']:<9} {safe(s['did'], limit=200)}  since {when(s['since'])}")
    if not rows:
        note("no listed senders")


def _set(ctx: typer.Context, did: str, status: Any, json_out: bool, verb: str) -> None:
    did = did_option(did, "DID")
    store = _store(ctx)
    try:
        store.set_sender(did, status, int(time.time()))
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "did": did, "status": status})
    else:
        say(f"{verb} {did}")


@senders_app.command("allow")
@handles_errors
def senders_allow(ctx: typer.Context, did: Annotated[str, typer.Argument(metavar="DID")],
                  json_out: JsonOpt = False) -> None:
    """Let this sender skip quarantine (and a closed door's introduction)."""
    _set(ctx, did, "allowed", json_out, "allowed")


@senders_app.command("block")
@handles_errors
def senders_block(ctx: typer.Context, did: Annotated[str, typer.Argument(metavar="DID")],
                  json_out: JsonOpt = False) -> None:
    """Refuse this sender outright (-32010), whatever grant it holds."""
    _set(ctx, did, "blocked", json_out, "blocked")


@senders_app.command("unblock")
@handles_errors
def senders_unblock(ctx: typer.Context, did: Annotated[str, typer.Argument(metavar="DID")],
                    json_out: JsonOpt = False) -> None:
    """Remove this sender from the lists."""
    _set(ctx, did, None, json_out, "unblocked")
