"""``op --as ME intro ask``, ``op --as ME introduce [list]`` and ``op --as ME intros``:
introductions, asked for, vouched and held (docs/trust.md). The flows are
``visit.introduce``'s; this module parses and renders."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe, when
from muretai_cli.cli._tree import AsGroup
from muretai_cli.cli._visitout import DEFAULT_MAX_BYTES, TimeoutOpt

if TYPE_CHECKING:
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.visit.send import Sender, SendReport


class _IntroduceGroup(AsGroup):
    """``introduce SUBJECT …`` vouches; ``introduce list`` (and later verbs) are its
    subcommands: a first word that names none is the subject."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from muretai_cli.cli._tree import hoist_as

        args = hoist_as(args)
        rest = [a for a in args if a not in ("-h", "--help")]
        words = _first_word(rest)
        if words is not None and words not in self.commands:
            at = args.index(words)
            args = [*args[:at], "vouch", *args[at:]]
        return super().parse_args(ctx, args)


_VALUED = ("--as", "--keys", "--db", "--to", "--expertise", "--trust", "--valid", "--timeout",
           "--relay")


def _first_word(args: list[str]) -> str | None:
    i = 0
    while i < len(args):
        if args[i] in _VALUED:
            i += 2
            continue
        if args[i].startswith("-"):
            i += 1
            continue
        return args[i]
    return None


intro_app = typer.Typer(cls=AsGroup, no_args_is_help=True,
                        help="Ask an introducer to introduce you to someone new.")
introduce_app = typer.Typer(cls=_IntroduceGroup, no_args_is_help=True,
                            help="Vouch for someone: introduce SUBJECT --to TARGET; list what "
                                 "you issued.")

ToOpt = Annotated[str, typer.Option("--to", help="The one to be introduced to (DID or name).",
                                    show_default=False)]


def register(op_app: typer.Typer) -> None:
    op_app.add_typer(intro_app, name="intro")
    op_app.add_typer(introduce_app, name="introduce")
    op_app.command("intros")(intros)


def _sender(ctx: typer.Context, store: IdentityStore, timeout: str) -> Sender:
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.cli._durations import parse_seconds
    from muretai_cli.cli._visitout import client_for
    from muretai_cli.home import ConnectionStore, PinStore, Profiles, TrustList
    from muretai_cli.visit.send import Sender

    ident = op_identity(ctx)
    key = ident.signing_key()
    return Sender(key, store, ConnectionStore(key.did), client_for, int(time.time()),
                  my_relay=Profiles().relay_of(key.did), timeout=parse_seconds(timeout),
                  max_bytes=DEFAULT_MAX_BYTES, pins=PinStore(), trust=TrustList(),
                  message_key=ident.message_key(), name=ident.name)


def _sent_line(what: str, report: SendReport) -> str:
    return f"{what}: {report.state} to {report.to} ({report.channel}, {report.message_id})"


@intro_app.command("ask")
def intro_ask(
    ctx: typer.Context,
    introducer: Annotated[str, typer.Argument(metavar="INTRODUCER",
                                              help="Who you ask (DID or name).")],
    to: ToOpt,
    note_text: Annotated[str | None, typer.Option(
        "--note", help="A word for the introducer, sent as a second message.",
        show_default=False)] = None,
    relay: Annotated[str | None, typer.Option(
        "--relay", help="The introducer's relay, when no other way to reach them is known.",
        show_default=False)] = None,
    timeout: TimeoutOpt = "30",
    json_out: JsonOpt = False,
) -> None:
    """Ask INTRODUCER to introduce you to --to: a signed request, by the usual DM route."""
    from muretai_cli.cli._dids import did_option
    from muretai_cli.cli._opdoor import op_store
    from muretai_cli.visit.introduce import ask

    store = op_store(ctx)
    try:
        who = did_option(introducer, "INTRODUCER", store=store)
        target = did_option(to, "--to", store=store)
        asked = ask(_sender(ctx, store, timeout), who, target, note_text, relay_url=relay)
    finally:
        store.close()
    if json_out:
        emit_json(asked.to_json())
        return
    say(_sent_line(f"asked {who} to introduce you to {target}", asked.request))
    if asked.note is not None:
        note(_sent_line("note", asked.note))


@introduce_app.command("vouch", hidden=True)
def introduce(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(metavar="SUBJECT",
                                           help="Who you vouch for (DID or name).")],
    to: ToOpt,
    expertise: Annotated[list[str] | None, typer.Option(
        "--expertise", help="What they know (repeatable).", show_default=False)] = None,
    trust: Annotated[str, typer.Option("--trust", help="How much you trust them, 0.0-1.0.")
                     ] = "1.0",
    valid: Annotated[str, typer.Option("--valid", help="How long the introduction lasts.")
                     ] = "30d",
    proactive: Annotated[bool, typer.Option(
        "--proactive", help="Vouch though they did not ask (no live request needed).")
                         ] = False,
    timeout: TimeoutOpt = "30",
    json_out: JsonOpt = False,
) -> None:
    """Introduce SUBJECT to --to: mint the credential (requested, or --proactive), record
    it, propose it to the target, and give it to SUBJECT with the target's reach."""
    from muretai_cli.artifacts.introduction import trust_bp
    from muretai_cli.cli._dids import did_option
    from muretai_cli.cli._durations import parse_duration
    from muretai_cli.cli._opdoor import op_store
    from muretai_cli.visit.introduce import vouch

    level = trust_bp(trust)
    seconds = parse_duration(valid, name="--valid")
    store = op_store(ctx)
    try:
        who = did_option(subject, "SUBJECT", store=store)
        target = did_option(to, "--to", store=store)
        done = vouch(_sender(ctx, store, timeout), who, target, expertise=expertise or (),
                     trust=level, valid_for=seconds, proactive=proactive)
    finally:
        store.close()
    if json_out:
        emit_json(done.to_json())
        return
    facts = done.intro.facts()
    say(f"introduced {who} to {target}: {facts['id']} ({facts['provenance']}, trust "
        f"{facts['trustLevelBp'] / 1000:g}, until {facts['validUntil']})")
    if done.gift is not None:
        note(_sent_line("given to the subject", done.gift))
    proposal = done.proposal
    if proposal is not None and proposal.get("ok") is False:
        note(f"not proposed to the target: {safe(str(proposal.get('error')), limit=80)}: "
             f"{safe(str(proposal.get('message')), limit=300)}")
    elif proposal is not None:
        note("proposed to the target for its review: "
             f"{safe(str(proposal.get('state')), limit=20)}")


@introduce_app.command("list")
def introduce_list(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """The introductions you issued, oldest first."""
    from muretai_cli.cli._opdoor import op_store

    store = op_store(ctx)
    try:
        rows = store.issued_intros()
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "issued": rows})
        return
    for r in rows:
        say(f"{r['id']}  {when(r['issued'])}  {r['subject']} -> {r['target']}  "
            f"{r['provenance']}  until {when(r['validUntil'])}")
    if not rows:
        note("no introductions issued")


def intros(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """The introductions you hold (given to you by their issuers), newest first."""
    from muretai_cli.cli._opdoor import op_store

    store = op_store(ctx)
    try:
        rows = store.held_intros()
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "held": rows})
        return
    now = int(time.time())
    for r in rows:
        state = "live" if r["validUntil"] > now else "expired"
        reach = r["url"] or r["relay"] or "no reach given"
        say(f"{safe(r['id'], limit=80)}  to {safe(r['target'], limit=120)}  by "
            f"{safe(r['issuer'], limit=120)}  {state} until {when(r['validUntil'])}  "
            f"via {safe(reach, limit=200)}")
    if not rows:
        note("no introductions held")
