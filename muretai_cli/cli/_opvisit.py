"""``op --as ME contact dm|list`` and ``op --as ME handoff follow``: signed DMs, as you."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._dids import did_option
from muretai_cli.cli._input import read_input
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe
from muretai_cli.cli._tree import AsGroup
from muretai_cli.cli._visitout import (
    DEFAULT_MAX_BYTES,
    MaxBytesOpt,
    TimeoutOpt,
    WbaAgentOpt,
    WbaOpt,
    dm_lines,
    handoff_lines,
    make_client,
    peer_refusal_lines,
    progress,
    quoted,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from muretai_cli.visit.dm import DmReport
    from muretai_cli.visit.send import SendReport

contact_app = typer.Typer(cls=AsGroup, no_args_is_help=True,
                          help="Contact grants you issue; doors you write to (signed DMs).")
handoff_app = typer.Typer(no_args_is_help=True, help="Follow a handoff (with confirmation); "
                                                     "checking one: muretai handoff check.")

MAX_MESSAGE_BYTES = 64 * 1024
ContextOpt = Annotated[str | None, typer.Option(
    "--context", help="Continue this conversation (its contextId); default: a new one.",
    show_default=False)]


def _text_of(raw: bytes, source: str) -> str:
    from muretai_cli.errors import InputError

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not-utf8", f"{source}: the message is not UTF-8") from None
    if text.endswith("\n"):  # one trailing newline from echo or an editor is not the message
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return text


def message_text(message: str | None, message_file: str | None) -> str:
    """MESSAGE, ``-`` (stdin) or ``--message-file F``: exactly one of them."""
    from muretai_cli.errors import InputError

    if (message is None) == (message_file is None):
        raise InputError("usage", "give the message as MESSAGE, - (stdin) or --message-file F "
                                  "(exactly one)")
    if message_file is not None:
        return _text_of(read_input(message_file, limit=MAX_MESSAGE_BYTES), message_file)
    if message == "-" or message is None:
        return _text_of(read_input("-", limit=MAX_MESSAGE_BYTES), "stdin")
    return message


def connect_value(connect: str | None) -> str | Mapping[str, Any] | None:
    """``--connect``: a card URL (http/https) or a grant file."""
    if connect is None:
        return None
    if connect.lower().startswith(("https://", "http://")):
        return connect
    from muretai_cli.errors import InputError
    from muretai_cli.seam import parse_document

    doc = parse_document(read_input(connect, limit=64 * 1024))
    if not isinstance(doc, dict):
        raise InputError("bad-grant", f"{connect}: a grant file holds one JSON object")
    return doc


def _render_dm(report: DmReport, json_out: bool) -> None:
    if json_out:
        emit_json(report.to_json())
    else:
        redeem = {"redeemed": "grant redeemed", "open-door": "open door (no redeem)",
                  "not-needed": "connected"}[report.redeemed]
        note(f"sent {report.sent_id} to {report.to} at {safe(report.endpoint)} ({redeem})")
        if report.card is not None:
            for r in report.card.verdict.warnings:
                note(f"warning: card: {r.code}: {safe(r.detail)}")
        for line in dm_lines(report):
            say(line)
        for r in report.reply.verdict.warnings:
            note(f"warning: reply: {r.code}: {safe(r.detail)}")
    if report.exit_code:
        raise typer.Exit(report.exit_code)


def _with_refusal_details(json_out: bool, run: Callable[[], None]) -> None:
    """Show a door's refusal (JSON-RPC error, Retry-After, gate text) before it is rendered."""
    from muretai_cli.errors import PeerRefused

    try:
        run()
    except PeerRefused as exc:
        if not json_out:
            for line in peer_refusal_lines(exc.data):
                note(line)
        raise


def dm(
    ctx: typer.Context,
    did: Annotated[str, typer.Argument(help="The peer's DID.")],
    message: Annotated[str | None, typer.Argument(help="The text, or - to read stdin.",
                                                  show_default=False)] = None,
    message_file: Annotated[str | None, typer.Option(
        "--message-file", help="Read the text from a file.", show_default=False)] = None,
    connect: Annotated[str | None, typer.Option(
        "--connect", help="A card URL, or a contact grant file.", show_default=False)] = None,
    card_url: Annotated[str | None, typer.Option(
        "--card-url", help="Where the door is (its card or base URL).",
        show_default=False)] = None,
    relay: Annotated[str | None, typer.Option(
        "--relay", help="The peer's relay: its card there says how to reach it.",
        show_default=False)] = None,
    context: ContextOpt = None,
    reply_to: Annotated[str | None, typer.Option(
        "--reply-to", help="The messageId this answers (sets metadata.replyTo and, by "
                           "default, its conversation).", show_default=False)] = None,
    timeout: TimeoutOpt = "30",
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    wba: WbaOpt = False,
    wba_agent: WbaAgentOpt = None,
    wait_reply: Annotated[bool, typer.Option(
        "--wait-reply", help="Then wait for the peer's reply to it (with --context: any "
        "message of the conversation): 25 s, or the seconds after it (≤ 30); none: exit 5."
        )] = False,
    json_out: JsonOpt = False,
) -> None:
    """Send one signed DM: knock on the peer's door, or seal it and deposit it at its relay.

    With --wba the requests to the door (its card, the knock) are also signed with Web Bot
    Auth as this identity; a relay deposit is not.

    States: delivered (the door accepted it; its reply is checked), queued (the relay holds
    it), held (a first contact awaiting the owner's approval: exit 0), refused (exit 4).
    """
    import time

    from muretai_cli.cli._acting import op_identity
    from muretai_cli.cli._durations import parse_seconds
    from muretai_cli.cli._opdoor import op_store, wait_seconds
    from muretai_cli.cli._visitout import client_for
    from muretai_cli.home import ConnectionStore, PinStore, Profiles, TrustList
    from muretai_cli.visit.send import Sender, send_dm

    seconds = wait_seconds(wait_reply, list(ctx.args))
    text = message_text(message, message_file)
    grant_or_url = connect_value(connect)
    ident = op_identity(ctx)
    key = ident.signing_key()
    store = op_store(ctx)
    try:
        did = did_option(did, "DID", store=store)
    except BaseException:
        store.close()
        raise
    signer = None
    if wba:
        from muretai_cli.visit.wba import request_signer

        signer = request_signer(key, agent=wba_agent)
    sender = Sender(key, store, ConnectionStore(key.did), client_for, int(time.time()),
                    my_relay=Profiles().relay_of(key.did), timeout=parse_seconds(timeout),
                    max_bytes=max_bytes, pins=PinStore(), trust=TrustList(), signer=signer,
                    message_key=ident.message_key(), name=ident.name)

    from muretai_cli.visit.introduce import first_contact

    # A first DM to someone an introducer vouched us to carries the credential (metadata.vc)
    # and, when nothing else says how to reach them, goes where the gift said.
    first = first_contact(store, sender, did, sender.now,
                          routed=bool(connect or card_url or relay))
    if first is not None:
        note(f"attaching the introduction {safe(first.credential_id, limit=80)}")
        card_url, relay = card_url or first.card_url, relay or first.relay_url

    def run() -> None:
        from muretai_cli.cli import _opreply

        after = store.latest_seq() if wait_reply else 0  # the reply's cursor: before it goes
        with progress(f"sending to {did}"):
            report = send_dm(sender, did, text, connect=grant_or_url, card_url=card_url,
                             relay_url=relay, context_id=context, reply_to=reply_to,
                             extra_metadata=first.metadata if first is not None else None)
        if not wait_reply:
            _render_send(report, json_out)
            return
        from muretai_cli.cli._acting import op_db

        _opreply.finish(report, store, after=after, seconds=seconds, context=context,
                        drain=_opreply.drain_for(ident, op_db(ctx)), json_out=json_out,
                        render=_render_send)

    try:
        _with_refusal_details(json_out, run)
    finally:
        store.close()


def _render_send(report: SendReport, json_out: bool) -> None:
    for r in report.reasons:
        note(f"warning: {r.code}: {safe(r.detail)}")
    if report.state == "delivered" and report.dm is not None:
        if json_out:
            emit_json(report.to_json())
            if report.exit_code:
                raise typer.Exit(report.exit_code)
            return
        _render_dm(report.dm, False)
        return
    if json_out:
        emit_json(report.to_json())
    elif report.state == "queued":
        say(f"queued at {safe(report.address)}")
        from muretai_cli.cli._dids import named

        note(f"sent {report.message_id} to {named(report.to, report.to_name)} (conversation "
             f"{safe(report.context_id)}); it waits there until the peer runs turn-check")
    elif report.state == "held":
        where = f" at {safe(report.address)}" if report.address else ""
        say(f"held for approval{where}: request {safe(report.request_id)}, message "
            f"{report.message_id}")
        if report.already_held:
            note("this text was sent before and is still held; it was not sent again "
                 "(the owner's approval delivers it)")
        else:
            for line in peer_refusal_lines(dict(report.refusal or {})):
                note(line)
            note("a first contact: the door's owner decides; do not resend it")


DM_SETTINGS = {"allow_extra_args": True}  # --wait-reply's seconds, as inbox --wait's
contact_app.command("dm", context_settings=DM_SETTINGS)(dm)


@contact_app.command("verify")
def verify_contact(
    ctx: typer.Context,
    did: Annotated[str, typer.Argument(help="The peer's DID.")],
    fingerprint_: Annotated[str, typer.Argument(
        metavar="FINGERPRINT", help="The fingerprint the peer read you (`muretai id show` "
                                    "prints it), over a channel you trust.")],
    json_out: JsonOpt = False,
) -> None:
    """Mark a peer as checked out of band: its fingerprint matched the one it read you.

    The mark is this identity's, kept in $MURETAI_HOME/verified/; connections, inbox and
    requests show it. A fingerprint that does not match marks nothing (exit 1).
    """
    import time

    from muretai_cli.artifacts.diddoc import fingerprint, same_fingerprint
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.errors import InputError, Refused
    from muretai_cli.home import VerifiedPeers

    ident = op_identity(ctx)
    did = did_option(did, "DID")
    if did == ident.did:
        raise InputError("to-self", "that DID is this identity's own")
    if not same_fingerprint(fingerprint_, did):
        raise Refused("fingerprint-mismatch", f"{safe(fingerprint_, limit=60)!r} is not the "
                                              f"fingerprint of {did}; nothing was marked",
                      hint="this is not the key you were told of: ask again over another "
                           "channel, and do not write to it meanwhile")
    VerifiedPeers(ident.did).mark(did, fingerprint(did), int(time.time()))
    if json_out:
        emit_json({"ok": True, "as": ident.name, "did": did, "fingerprint": fingerprint(did),
                   "checkedOutOfBand": True})
    else:
        say(f"checked {did} ({fingerprint(did)})")


@handoff_app.command("follow")
def follow(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="The tool result (JSON), or - for stdin.")],
    origin: Annotated[str, typer.Option("--origin", help="The site the result came from.")],
    send: Annotated[bool, typer.Option("--send", help="Send the suggested message as "
                                       "shown.")] = False,
    message: Annotated[str | None, typer.Option("--message", help="Send this text instead.",
                                                show_default=False)] = None,
    timeout: TimeoutOpt = "30",
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    json_out: JsonOpt = False,
) -> None:
    """Check a handoff, then send only what you confirm to the first followable dm entry."""
    import time

    from muretai_cli.cli._acting import op_identity
    from muretai_cli.cli._handoff import online_cards
    from muretai_cli.errors import InputError
    from muretai_cli.home import ConnectionStore
    from muretai_cli.urls import base_from_any
    from muretai_cli.visit.dm import deliver, target_for_entry
    from muretai_cli.visit.handoff import check_handoff_bytes

    if send and message is not None:
        raise InputError("usage", "give --send or --message, not both")
    raw = read_input(file)
    base = base_from_any(origin)
    ident = op_identity(ctx)
    now = int(time.time())

    def run() -> None:
        with make_client(timeout, max_bytes) as client:
            cards = online_cards(base, client, now, False)
            with progress(f"checking the handoff against {base.text}"):
                report = check_handoff_bytes(raw, cards, person=False, now=now)
            if not report.followable:
                if json_out:
                    emit_json({**report.to_json(), "sent": False})
                else:
                    for line in handoff_lines(file, report):
                        say(line)
                raise typer.Exit(report.exit_code)
            item = report.followable[0]
            suggestion = item.entry.message
            shown = safe(suggestion, multiline=True, limit=None) if suggestion else None
            text = _choose_text(send, message, shown, item.entry.to or "", json_out)
            if text is None:
                if json_out:
                    emit_json({**report.to_json(), "ok": True, "sent": False,
                               "why": "not confirmed"})
                raise typer.Exit(0)
            target = target_for_entry(item, cards)
            with progress(f"sending to {target.door_did}"):
                sent = deliver(ident.signing_key(), target, text, client=client, now=now,
                               connections=ConnectionStore(ident.did),
                               message_key=ident.message_key())
        _render_dm(sent, json_out)

    _with_refusal_details(json_out, run)


def _choose_text(send: bool, message: str | None, shown: str | None, to: str,
                 json_out: bool) -> str | None:
    """What to send: --message, --send (the suggestion as shown), or a person's yes."""
    from muretai_cli.errors import InputError

    if message is not None:
        if not message:
            raise InputError("empty-message", "--message is empty")
        return message
    if shown is not None:
        note(f"suggested message for {safe(to)} (untrusted text from the site):")
        for line in quoted(shown, limit=None):
            note(line)
    if send:
        if not shown:
            raise InputError("no-suggestion", "the handoff suggests no message; use --message")
        return shown
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        note("nothing sent: no terminal to confirm on (use --send or --message TEXT)")
        return None
    if shown and typer.confirm("Send the suggested message exactly as shown?", err=True):
        return shown
    typed: str = typer.prompt("Your own message (empty sends nothing)", default="",
                              show_default=False, err=True)
    if not typed.strip():
        note("nothing sent")
        return None
    return typed
