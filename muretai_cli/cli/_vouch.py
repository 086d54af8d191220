"""``op introduce propose | revoke | revocations`` and the proposals in ``op requests``.

The introducer proposes a credential it issued to its target (``introduce propose FILE
--to TARGET``); the target reviews it beside its held first contacts (``op requests``,
``requests approve|reject p-…``), and its decision is sent back to the introducer. An
issuer revokes what it issued (``introduce revoke ID``); its door serves the signed list.
Everything a peer wrote (notes, expertise, names) is printed through ``safe()``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe, when
from muretai_cli.errors import InputError

if TYPE_CHECKING:
    from muretai_cli.artifacts.vouch import Decision
    from muretai_cli.home import Identity
    from muretai_cli.inbox.proposals import ProposalRow
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.seam import SigningKey

PROPOSAL_PREFIX = "p-"  # review ids of proposals; held first contacts' are "r-…"
# The group `op introduce` (the gate's commands join it at merge: `register_vouch`).
introduce_app = typer.Typer(help="Introductions you issue: propose, revoke.",
                            no_args_is_help=True)


def register_vouch(app: typer.Typer) -> None:
    """Add ``propose``, ``revoke`` and ``revocations`` to the ``op introduce`` group."""
    app.command("propose")(introduce_propose)
    app.command("revoke")(introduce_revoke)
    app.command("revocations")(introduce_revocations)


def _store(ctx: typer.Context) -> IdentityStore:
    """The acting identity's store (``op --as``, its ``--db``), as ``_opdoor.op_store``."""
    from muretai_cli.cli._acting import op_db, op_identity
    from muretai_cli.cli._door import open_store

    return open_store(op_identity(ctx), op_db(ctx))


def introduce_propose(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(metavar="FILE", help="The credential (JSON) you "
                                         "issued, or - for stdin.")],
    to: Annotated[str, typer.Option("--to", metavar="DID|NAME", help="Its target: the "
                                    "credential's introducedTo.")],
    url: Annotated[str | None, typer.Option("--url", metavar="ENDPOINT", help="The target's "
                                            "door (its POST endpoint).",
                                            show_default=False)] = None,
    relay: Annotated[str | None, typer.Option("--relay", metavar="URL", help="The target's "
                                              "relay (its card there names its enc_pub).",
                                              show_default=False)] = None,
    note_text: Annotated[str | None, typer.Option("--note", metavar="TEXT", help="A note "
                                                  "for the target.", show_default=False)] = None,
    my_url: Annotated[str | None, typer.Option("--my-url", metavar="ENDPOINT", help="Your "
                                               "door, where the target answers (default: "
                                               "your relay).", show_default=False)] = None,
    json_out: JsonOpt = False,
) -> None:
    """Propose an introduction you issued to its target, for the target's review."""
    from muretai_cli.artifacts.vouch import Reach
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.cli._dids import did_option
    from muretai_cli.cli._input import read_input
    from muretai_cli.cli._visitout import client_for
    from muretai_cli.home import Profiles
    from muretai_cli.seam import parse_document
    from muretai_cli.visit.vouch import Peer, propose

    target = did_option(to, "--to")
    credential = parse_document(read_input(file))
    if not isinstance(credential, dict):
        raise InputError("not-a-credential", "the file holds no JSON object")
    ident = op_identity(ctx)
    key = ident.signing_key()
    mine = Profiles().relay_of(key.did)
    peer = _known_peer(ctx, target) if url is None and relay is None \
        else Peer(target, url, relay)
    store = _store(ctx)
    try:
        out = propose(key, credential, target=peer, store=store, client_for=client_for,
                      now=int(time.time()), note=note_text,
                      reach=Reach(my_url, mine, key.enc_pub if mine else None))
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, **out})
        return
    say(f"proposed {safe(out['credentialId'], limit=120)} to {target}: {out['state']}"
        f" (proposal {safe(out['proposalId'], limit=80)}, by {out['channel']})")


def _known_peer(ctx: typer.Context, did: str) -> Any:
    """How ``did`` was reached before: a remembered door connection, else the relay it
    named in a verified message."""
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.home import ConnectionStore
    from muretai_cli.visit.vouch import Peer

    connection = ConnectionStore(op_identity(ctx).did).get(did)
    if connection is not None:
        return Peer(did, connection.endpoint)
    store = _store(ctx)
    try:
        relay = store.peer_relay(did)
    finally:
        store.close()
    if relay is not None:
        return Peer(did, relay=relay)
    raise InputError("not-connected", f"no way to reach {did} is known yet",
                     hint="give --url ENDPOINT (its door) or --relay URL")


def introduce_revoke(
    ctx: typer.Context,
    credential_id: Annotated[str, typer.Argument(metavar="CREDENTIAL_ID")],
    json_out: JsonOpt = False,
) -> None:
    """Revoke an introduction you issued: your door's list names it from now on."""
    from muretai_cli.inbox.proposals import ProposalBook

    if not credential_id or len(credential_id) > 256:
        raise InputError("bad-credential-id", "a credential id is 1..256 characters")
    store = _store(ctx)
    try:
        new = ProposalBook(store.db).revoke(credential_id, int(time.time()))
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "credentialId": credential_id, "new": new})
        return
    say(f"revoked {safe(credential_id, limit=256)}" + ("" if new else " (already revoked)"))
    note("your door serves the list (/.well-known/muretai-revocations.json); on a relay "
         "only, `muretai card publish` puts it on your relay card")


def introduce_revocations(ctx: typer.Context) -> None:
    """Print your signed revocation list (what your door serves)."""
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.inbox.proposals import ProposalBook, signed_revocations

    key = op_identity(ctx).signing_key()
    store = _store(ctx)
    try:
        ids = ProposalBook(store.db).revoked_ids()
    finally:
        store.close()
    emit_json(signed_revocations(key, ids, int(time.time())))


def relay_card_revocations(ident: Identity, key: SigningKey, now: int
                           ) -> dict[str, Any] | None:
    """``inbox.proposals.card_revocations`` from the identity's own store."""
    from muretai_cli.cli._door import open_store
    from muretai_cli.inbox.proposals import card_revocations

    store = open_store(ident)
    try:
        return card_revocations(store, key, now)
    finally:
        store.close()


# -- the target's review (``op requests``) ---------------------------------------------------

def proposal_rows(store: IdentityStore, *, all_: bool = False) -> list[dict[str, Any]]:
    """Proposals awaiting review (every one with ``all_``), as ``requests --json`` shows."""
    from muretai_cli.inbox.proposals import ProposalBook

    return [r.to_json() for r in ProposalBook(store.db).rows(all_=all_)]


def print_proposals(rows: list[dict[str, Any]]) -> None:
    """The proposals section of ``op requests``: who vouches for whom, how strongly, and
    what the introducer wrote (quoted, made inert)."""
    from muretai_cli.cli._visitout import quoted

    if not rows:
        return
    say("introductions proposed to you:")
    for r in rows:
        trust = r["trustLevelBp"]
        level = f"{trust / 1000:.3f}" if isinstance(trust, int) else "?"
        expertise = ", ".join(safe(e, limit=200) for e in r["expertise"]
                              if isinstance(e, str)) or "-"
        say(f"{r['proposalId']}  {when(r['received'])}  {safe(r['introducer'], limit=120)} "
            f"vouches for {safe(r['subject'], limit=120)}  trust {level}  "
            f"expertise {expertise}  {safe(r['provenance'], limit=40)}  {r['status']}")
        if r["note"]:
            for line in quoted(r["note"], limit=1000):
                say(line)


def is_proposal_id(review_id: str) -> bool:
    return review_id.startswith(PROPOSAL_PREFIX)


def decide_proposal(ctx: typer.Context, review_id: str, decision: Decision,
                    json_out: bool) -> None:
    """Record the owner's decision, run ``on_proposal_approved`` on an approval, and tell
    the introducer (a failure to tell is reported on stderr; the decision stands)."""
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.cli._visitout import client_for
    from muretai_cli.errors import MuretaiError
    from muretai_cli.inbox.proposals import ProposalBook, on_proposal_approved
    from muretai_cli.visit.vouch import respond

    now = int(time.time())
    store = _store(ctx)
    told: dict[str, Any] | None = None
    problem: MuretaiError | None = None
    try:
        book = ProposalBook(store.db)
        row: ProposalRow = book.decide(review_id, decision, now)
        if decision == "approved":
            on_proposal_approved(store, row.credential_id)
        try:
            told = respond(op_identity(ctx).signing_key(), row, decision,
                           client_for=client_for, now=now)
            book.mark_told(review_id, now)
        except MuretaiError as exc:
            problem = exc
    finally:
        store.close()
    if problem is not None:
        note(f"the introducer was not told: {safe(problem.code)}: "
             f"{safe(problem.detail, limit=300)}")
    if json_out:
        emit_json({"ok": True, **row.to_json(), "status": decision,
                   "told": told is not None,
                   **({"notTold": {"code": problem.code, "message": problem.detail}}
                      if problem is not None else {})})
        return
    verb = "approved" if decision == "approved" else "rejected"
    say(f"{verb} proposal {review_id} from {safe(row.introducer, limit=120)}"
        + ("" if told is None else f" (told by {told.get('channel')})"))


def vouch_event_line(event: dict[str, Any]) -> str:
    """A drained proposal or answer, for ``turn-check``."""
    reason = event.get("reason") or {}
    who = safe(event.get("from") or "?", limit=120)
    if reason.get("code") == "proposed":
        return (f"introduction proposed by {who}: review it with `op requests` "
                f"(proposal {safe(reason.get('message'), limit=80)})")
    return f"{who} answered your introduction: {safe(reason.get('message'), limit=40)}"
