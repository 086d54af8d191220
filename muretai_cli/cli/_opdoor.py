"""``op --as NAME inbox | requests | senders``: the owner's side of the door.

These work on the door's database directly; the door need not be running (WAL lets both
use it at once). Everything a sender wrote is untrusted and printed through ``safe()``.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._dids import did_option
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe, when
from muretai_cli.cli._visitout import quoted
from muretai_cli.errors import InputError
from muretai_cli.inbox.vouches import mark_requests

if TYPE_CHECKING:
    from muretai_cli.inbox.store import IdentityStore

# A row whose stored text is not UTF-8 (a damaged file): shown, with U+FFFD where it breaks.
DAMAGED = "DAMAGED (not valid UTF-8 on disk)"
requests_app = typer.Typer(help="Held first contacts: list, approve, reject.",
                           invoke_without_command=True)
senders_app = typer.Typer(help="Allow and block lists.", invoke_without_command=True)


def op_store(ctx: typer.Context) -> IdentityStore:
    """The store of the identity named by ``op --as`` (its ``--db``, if given)."""
    from muretai_cli.cli._acting import op_db, op_identity
    from muretai_cli.cli._door import open_store

    return open_store(op_identity(ctx), op_db(ctx))


def register(op_app: typer.Typer) -> None:
    """Add the owner's commands to the ``op`` group."""
    op_app.command("inbox", context_settings={"allow_extra_args": True})(inbox)
    op_app.add_typer(requests_app, name="requests")
    op_app.add_typer(senders_app, name="senders")


def inbox(
    ctx: typer.Context,
    peer: Annotated[str | None, typer.Option("--peer", help="Only the conversations with "
                                             "this DID.", show_default=False)] = None,
    context: Annotated[str | None, typer.Option("--context", help="Only this conversation "
                                                "(its contextId).", show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="Everything, not the last 20.")] = False,
    after: Annotated[int | None, typer.Option(
        "--after", min=0, help="Received messages after this seq, oldest first, each with "
        "its seq, and `latest` (read by cursor: moves nobody's position).",
        show_default=False)] = None,
    reply_to: Annotated[str | None, typer.Option(
        "--reply-to", help="With --after: only answers to this messageId.",
        show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", help="With --after: at most this many.")
                     ] = 50,
    wait: Annotated[bool, typer.Option("--wait", help="With --after: wait for one if none is "
                                       "there yet: 25 s, or the seconds after it (≤ 30).")
                    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Conversations, both directions (sent and received, by door or relay): the one with
    the latest message last, oldest first within each; verified flag, channel, reply link.
    With --after SEQ: what was received after that seq (a cursor), optionally waiting."""
    seconds = wait_seconds(wait, list(ctx.args))
    if after is None:
        if wait or reply_to is not None:
            raise InputError("usage", "--wait and --reply-to read after a cursor",
                             hint="add --after SEQ (0: from the start)")
    else:
        _inbox_after(ctx, after, peer=peer, context=context, reply_to=reply_to,
                     limit=limit, seconds=seconds if wait else None, json_out=json_out)
        return
    store = op_store(ctx)
    try:
        if peer is not None:
            peer = did_option(peer, "--peer", store=store)
        rows = store.conversation(peer=peer, context=context)
        names = _names(store)
    finally:
        store.close()
    if not all_:
        rows = rows[-20:]
    checked = checked_peers(ctx)
    for m in rows:
        m["from" if m["direction"] == "in" else "to"] = m["peer"]
        m["peerName"] = names.get(m["peer"])
        m["checkedOutOfBand"] = m["peer"] in checked
    mark_requests(rows)
    if json_out:
        emit_json({"ok": True, "messages": rows})
        return
    previous: object = None
    for m in rows:
        group = (m["peer"], m["contextId"])
        if previous is not None and group != previous:
            say("")
        previous = group
        for line in message_lines(m):
            say(line)
    if not rows:
        note("no messages yet")


def wait_seconds(wait: bool, extra: list[str]) -> int:
    """``--wait`` alone is 25 s; ``--wait N`` is N (0-30): ``inbox.reader``'s bounds."""
    from muretai_cli.inbox.reader import WAIT_DEFAULT, WAIT_MAX

    if not extra:
        return int(WAIT_DEFAULT) if wait else 0
    if not wait or len(extra) != 1 or not extra[0].isdigit():
        raise InputError("usage", f"unexpected argument {safe(' '.join(extra), limit=60)!r}",
                         hint="use --wait [SECONDS] (0-30)")
    seconds = int(extra[0])
    if seconds > WAIT_MAX:
        raise InputError("usage", f"--wait is at most {WAIT_MAX:g} seconds")
    return seconds


def _inbox_after(ctx: typer.Context, after: int, *, peer: str | None, context: str | None,
                 reply_to: str | None, limit: int, seconds: int | None,
                 json_out: bool) -> None:
    from muretai_cli.inbox.reader import read_after, wait_after

    store = op_store(ctx)
    try:
        if peer is not None:
            peer = did_option(peer, "--peer", store=store)
        # What the answer is rendered with is read before a wait, so that a waiter's answer
        # leaves as soon as the entry is committed (the owner's names, the checked peers).
        names = _names(store)
        checked = checked_peers(ctx)
        if seconds is None:
            page = read_after(store, after, peer=peer, context=context, reply_to=reply_to,
                              limit=limit)
        else:
            page = wait_after(store, after, peer=peer, context=context, reply_to=reply_to,
                              limit=limit, timeout=seconds)
    finally:
        store.close()
    entries = [{**e, "direction": "in", "fromName": names.get(e["from"]),
                "checkedOutOfBand": e["from"] in checked} for e in page.entries]
    mark_requests(entries)
    if json_out:
        emit_json({"ok": True, **page.to_json(), "entries": entries,
                   "timedOut": page.waited})
        sys.stdout.flush()  # a waiter's answer leaves now, not after the interpreter's exit
        return
    for e in entries:
        lines = message_lines({**e, "peer": e["from"], "peerName": e["fromName"]})
        say(f"seq {e['seq']}  {lines[0]}")
        for line in lines[1:]:
            say(line)
    if not entries:
        note(f"nothing after seq {after}" + (" (the wait ended)" if page.waited else ""))
    note(f"latest {page.latest}; next: --after {page.cursor}")


def message_lines(m: dict[str, Any]) -> list[str]:
    """One message for people: a header of facts, then the text quoted behind ``| ``."""
    from muretai_cli.cli._dids import named

    peer = named(m["peer"], m.get("peerName")) + (f" {CHECKED}" if m.get("checkedOutOfBand")
                                                  else "")
    if m["direction"] == "in":
        flag = "verified" if m["verified"] else "UNVERIFIED"
        head = f"{when(m['received'])}  <- {peer}  {flag}"
    else:
        head = f"{when(m['received'])}  -> {peer}  {safe(m.get('state') or 'sent', limit=20)}"
    ctx_id = safe(m["contextId"], limit=80) if m["contextId"] else "-"
    head += f"  {safe(m.get('channel') or 'door', limit=10)}  conversation {ctx_id}"
    if m.get("replyTo"):
        head += f"  reply to {safe(m['replyTo'], limit=80)}"
    if m.get("approved"):
        head += f"  approved {when(m['approved'])}"
    if m.get("wba"):
        from muretai_cli.cli._door import wba_text

        head += f"  {wba_text(m['wba'])}"
    if m.get("damaged"):
        head += f"  {DAMAGED}"
    asked = m.get("introductionRequest")
    if asked:
        return [head, f"  introduction request: {safe(asked['from'], limit=120)} asks you to "
                      f"introduce them to {safe(asked['for'], limit=120)}"
                      + (" (their note follows)" if asked.get("note") is not None else "")]
    return [head, *quoted(m["text"], limit=2000)]


CHECKED = "(checked out of band)"  # the mark of a peer `op contact verify` matched


def _names(store: IdentityStore) -> dict[str, str]:
    """DID -> the owner's name for it (``op contact name``), shown beside the DID."""
    from muretai_cli.cli._dids import contact_names

    return contact_names(store)


def checked_peers(ctx: typer.Context) -> frozenset[str]:
    """The peers the acting identity checked out of band (``op contact verify``)."""
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.home import VerifiedPeers

    return VerifiedPeers(op_identity(ctx).did).dids()


def _print_requests(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        kept = r.get("messages") or [r]
        from muretai_cli.cli._dids import named

        sender = named(r["from"], r.get("fromName")) + (f" {CHECKED}" if r["checkedOutOfBand"]
                                                        else "")
        say(f"{r['id']}  {when(r['received'])}  {sender}  {r['status']}"
            + (f"  ({len(kept)} messages)" if len(kept) > 1 else "")
            + (f"  {DAMAGED}" if r.get("damaged") else ""))
        for line in vouch_lines(r.get("vouch")):
            say(line)
        for message in kept:
            for line in quoted(message["text"], limit=500):
                say(line)


def vouch_lines(vouch: dict[str, Any] | None) -> list[str]:
    """A held request's vouch for people (``op requests``): who vouches for whom, the trust
    level, the expertise and the provenance; every value a peer wrote made inert."""
    if not vouch:
        return []
    issuer = safe(vouch.get("issuer"), limit=120)
    name = vouch.get("issuerName")
    who = f"{safe(name, limit=60)} ({issuer})" if name else issuer
    verdict = vouch.get("verdict")
    standing = {"not-a-contact": f"vouched for by {who}, who is not your contact",
                "pending": f"vouched for by {who}; the proposal awaits your review"
                }.get(str(verdict), f"vouched for by {who}")
    how = "proactive" if vouch.get("provenance") == "proactive" else \
        f"requested by {safe(vouch.get('subject'), limit=120)} on {when(vouch.get('requestedAt'))}"
    skills = ", ".join(safe(e, limit=80) for e in vouch.get("expertise") or []) or "-"
    bp = vouch.get("trustLevelBp")
    level = f"{bp / 1000:g}" if isinstance(bp, int) else "?"
    return [f"  {standing}",
            f"  introduces {safe(vouch.get('subject'), limit=120)} to "
            f"{safe(vouch.get('introducedTo'), limit=120)}; trust {level}; expertise {skills}; "
            f"{how}; until {safe(vouch.get('validUntil'), limit=40)}"]


def _named(row: dict[str, Any]) -> dict[str, Any]:
    """A request as --json shows it: ``requestId``, the name `dm` and `turn-check` give it;
    ``id`` too, which earlier releases printed (tests and scripts read it)."""
    return {"requestId": row["id"], **row}


@requests_app.callback()
def _requests(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        ctx.invoke(requests_list, ctx=ctx, json_out=False)


@requests_app.command("list")
def requests_list(
    ctx: typer.Context,
    all_: Annotated[bool, typer.Option("--all", help="Decided ones too.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Held first contacts, oldest first."""
    from muretai_cli.cli._vouch import print_proposals, proposal_rows

    store = op_store(ctx)
    try:
        rows = store.request_list(all_=all_)
        names = _names(store)
        proposals = proposal_rows(store, all_=all_)
    finally:
        store.close()
    checked = checked_peers(ctx)
    for row in rows:
        row["fromName"] = names.get(row["from"])
        row["checkedOutOfBand"] = row["from"] in checked
    if json_out:
        emit_json({"ok": True, "requests": [_named(r) for r in rows], "proposals": proposals})
        return
    _print_requests(rows)
    print_proposals(proposals)
    if not rows and not proposals:
        note("no held requests")


@requests_app.command("approve")
def requests_approve(
    ctx: typer.Context,
    request_id: Annotated[str, typer.Argument(metavar="ID")],
    json_out: JsonOpt = False,
) -> None:
    """Deliver the held message to the inbox and let that sender through from now on (a
    proposal's id, p-…: accept the introduction it proposes)."""
    from muretai_cli.cli._vouch import decide_proposal, is_proposal_id

    if is_proposal_id(request_id):
        decide_proposal(ctx, request_id, "approved", json_out)
        return
    store = op_store(ctx)
    try:
        out = store.approve(request_id, int(time.time()))
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, **_named(out)})
    else:
        say(f"approved {out['id']} from {safe(out['from'])}")


@requests_app.command("reject")
def requests_reject(
    ctx: typer.Context,
    request_id: Annotated[str, typer.Argument(metavar="ID")],
    block: Annotated[bool, typer.Option("--block", help="Also block the sender.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Drop the held message; the sender is refused until it redeems a new grant (a
    proposal's id, p-…: decline the introduction it proposes)."""
    from muretai_cli.cli._vouch import decide_proposal, is_proposal_id

    if is_proposal_id(request_id):
        decide_proposal(ctx, request_id, "declined", json_out)
        return
    store = op_store(ctx)
    try:
        out = store.reject(request_id, int(time.time()), block=block)
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, **_named(out)})
    else:
        say(f"rejected {out['id']} from {safe(out['from'])}" + (" (blocked)" if block else ""))


@senders_app.callback()
def _senders(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        ctx.invoke(senders_list, ctx=ctx, json_out=False)


@senders_app.command("list")
def senders_list(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Senders with a standing: allowed, blocked, approved, rejected."""
    store = op_store(ctx)
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
    store = op_store(ctx)
    try:
        did = did_option(did, "DID", store=store)
        store.set_sender(did, status, int(time.time()))
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "did": did, "status": status})
    else:
        say(f"{verb} {did}")


@senders_app.command("allow")
def senders_allow(ctx: typer.Context, did: Annotated[str, typer.Argument(metavar="DID")],
                  json_out: JsonOpt = False) -> None:
    """Let this sender skip quarantine (and a closed door's introduction)."""
    _set(ctx, did, "allowed", json_out, "allowed")


@senders_app.command("block")
def senders_block(ctx: typer.Context, did: Annotated[str, typer.Argument(metavar="DID")],
                  json_out: JsonOpt = False) -> None:
    """Refuse this sender outright (introduction required), whatever grant it holds."""
    _set(ctx, did, "blocked", json_out, "blocked")


@senders_app.command("unblock")
def senders_unblock(ctx: typer.Context, did: Annotated[str, typer.Argument(metavar="DID")],
                    json_out: JsonOpt = False) -> None:
    """Remove this sender from the lists."""
    _set(ctx, did, None, json_out, "unblocked")
