"""``muretai serve`` and ``muretai op contact issue|grants|revoke``: the receiving side.

starlette, uvicorn and sqlite3 are imported inside the commands, never at CLI import time.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._acting import AsOpt, DbOpt, KeysOpt, load_identity
from muretai_cli.cli._db import fix_command
from muretai_cli.cli._json import emit_json, emit_json_line
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe, when
from muretai_cli.errors import InputError

DEFAULT_PORT = 8788  # where serve listens when neither --port nor the --url names a port

if TYPE_CHECKING:
    from collections.abc import Callable

    from muretai_cli.door.config import DoorConfig
    from muretai_cli.home import Identity
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.transport.serve import Listening
    from muretai_cli.urls import BaseUrl

def open_store(ident: Identity, db: str | None = None, *, durable: bool = False) -> IdentityStore:
    """The identity's door store: its SQLite file, or ``db`` (``--db`` / ``MURETAI_DB``)."""
    from muretai_cli.inbox.store import open_identity_store

    return open_identity_store(ident.did, db, durable=durable, fix=fix_command(ident.name, db))


def _op_identity(ctx: typer.Context) -> Identity:
    from muretai_cli.cli._acting import op_identity

    return op_identity(ctx)


def _op_db(ctx: typer.Context) -> str | None:
    from muretai_cli.cli._acting import op_db

    return op_db(ctx)


def _did_configuration(path: Path | None, base: BaseUrl, did: str) -> bytes | None:
    """The bytes to serve for ``--did-configuration``: refused unless they bind ``did`` to
    the domain of ``base`` now (publish only what is true)."""
    if path is None:
        return None
    from muretai_cli.cli._input import read_input
    from muretai_cli.errors import MuretaiError
    from muretai_cli.seam import linked_did, parse_document
    from muretai_cli.site import domain_of

    raw = read_input(str(path))
    try:
        linked_did(parse_document(raw), domain=domain_of(base), did=did, now=int(time.time()))
    except MuretaiError as exc:
        raise InputError(exc.code, f"--did-configuration {path}: {exc.detail}",
                         hint=f"make one with `muretai domain link --as NAME --domain "
                              f"{domain_of(base)}`") from None
    return raw


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the root app."""
    app.command("serve")(serve)


def register_contact(contact_app: typer.Typer) -> None:
    """Add the grant verbs to the ``contact`` group (``op contact``, alias ``contact``)."""
    contact_app.command("issue")(issue)
    contact_app.command("grants")(grants)
    contact_app.command("revoke")(revoke)


def serve(
    url: Annotated[str, typer.Option("--url", help="The base URL visitors dial (https, or "
                                                   "http on loopback); may carry a path.")],
    as_: AsOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int | None, typer.Option(
        "--port", show_default=False,
        help="Port to bind (0: any free port); default: the --url's port, else 8788.")] = None,
    dm_policy: Annotated[str | None, typer.Option(
        "--dm-policy", help="open | quarantine | closed | introduced, for this run "
                            "(default: the identity's `op policy`, quarantine unless set).",
        show_default=False)] = None,
    rate_per_sender: Annotated[int, typer.Option(
        "--rate-per-sender", help="Signed requests per minute per sender (0 disables).")] = 60,
    rate_total: Annotated[int, typer.Option(
        "--rate-total", help="Signed requests per minute for the door (0 disables).")] = 600,
    did_configuration: Annotated[Path | None, typer.Option(
        "--did-configuration", show_default=False,
        help="Serve this did-configuration.json (from `muretai domain link`) at "
             "/.well-known/did-configuration.json; it must bind this identity to --url's "
             "domain.")] = None,
    org: Annotated[Path | None, typer.Option(
        "--org", help="A signed org membership to publish on the card.")] = None,
    max_connections: Annotated[int, typer.Option(
        "--max-connections", help="Open connections at once; past it a newcomer takes the "
                                  "place of the longest-idle one, or gets HTTP 503 "
                                  "(0 disables).")] = 1000,
    max_per_client: Annotated[int, typer.Option(
        "--max-per-client", help="Open connections from one address; past it HTTP 503 "
                                 "(0 disables).")] = 100,
    idle_seconds: Annotated[float, typer.Option(
        "--idle-seconds", help="A connection waiting for a request closes after this.")] = 5.0,
    wba_allow_private: Annotated[bool, typer.Option(
        "--wba-allow-private", help="Fetch a visitor's Web Bot Auth key directory even from a "
                                    "loopback or private address (a test network).")] = False,
    durable: Annotated[bool, typer.Option(
        "--durable", help="synchronous=FULL: commits also survive power loss.")] = False,
    slow_seconds: Annotated[float, typer.Option(
        "--slow-seconds", hidden=True, help="Deadline for headers and for the body.")] = 10.0,
    http: Annotated[str, typer.Option(
        "--http", hidden=True, help="HTTP parser: auto | httptools | h11.")] = "auto",
    workers: Annotated[int, typer.Option(
        "--workers", min=1, help="Processes serving on the one port (with PostgreSQL, or "
                                 "SQLite on one host: see docs/scale-out.md).")] = 1,
    on_message: Annotated[str | None, typer.Option(
        "--on-message", metavar="CMD", show_default=False,
        help="Run CMD (no shell) for each message delivered to the inbox, the verified "
             "message as JSON on stdin; what it prints is the signed reply's text. A "
             "failing or slow CMD leaves the receipt and logs a warning.")] = None,
    on_message_timeout: Annotated[str, typer.Option(
        "--on-message-timeout", metavar="DURATION",
        help="How long CMD may take: 5, 1.5s, 1m.")] = "5s",
    prefer: Annotated[list[str] | None, typer.Option(
        "--prefer", metavar="KIND[:WHEN]", show_default=False,
        help="The site's order of its ways in, published as agentEntry.prefer (repeat, in "
             "order): page, card or mcp, optionally :person, :alone, :key, :no-key, :token "
             "or :browser.")] = None,
    skill: Annotated[list[Path] | None, typer.Option(
        "--skill", metavar="FILE", show_default=False,
        help="Add the A2A skills in FILE (one skill object or an array) to the card "
             "(repeatable).")] = None,
    db: DbOpt = None,
    keys: KeysOpt = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Also print each event as a JSON line on stdout: listening, "
                       "accepted, held, refused, answered.")] = False,
) -> None:
    """Run the door: the signed card, message/send and contact/redeem, on 127.0.0.1.

    Each arrival is logged on stderr (time, outcome, method, claimed sender).
    """
    from muretai_cli.cli._durations import parse_seconds
    from muretai_cli.cli._input import read_input
    from muretai_cli.urls import parse_base_url

    base = parse_base_url(url)
    if port is None:  # the URL's own port when it names one (http://127.0.0.1:18788)
        port = base.port if base.port is not None else DEFAULT_PORT
    if not 0 <= port <= 65535:
        raise InputError("bad-port", f"--port {port} is outside 0-65535")
    if base.text != url:
        note(f"serving as {base.text} (the canonical form of {safe(url)})")
    from muretai_cli.door.core import DoorConfig
    from muretai_cli.door.publish import load_skills, parse_prefer

    # Checked before the identity is loaded or anything is opened: a bad setting is exit 2.
    checked = DoorConfig(name="door", url=base, prefer=parse_prefer(prefer or []),
                         skills=load_skills(skill or []),
                         policy=dm_policy or "quarantine",  # type: ignore[arg-type]
                         rate_per_sender=rate_per_sender, rate_total=rate_total,
                         slow_seconds=slow_seconds, max_connections=max_connections,
                         max_per_client=max_per_client, idle_seconds=idle_seconds)
    responder = None
    if on_message is not None:
        from muretai_cli.door.respond import OnMessage

        # A forked worker gets its own copy (its slots are made on its own loop).
        responder = OnMessage(on_message, timeout=parse_seconds(
            on_message_timeout, name="--on-message-timeout"))
    ident = load_identity(as_, keys)
    linkage = _did_configuration(did_configuration, base, ident.did)
    membership = None
    if org is not None:
        from muretai_cli.artifacts.org import check_membership
        from muretai_cli.seam import parse_document

        doc = parse_document(read_input(str(org)))
        membership = check_membership(doc, agent_did=ident.did, now=int(time.time())).to_json()

    from muretai_cli.db import is_postgres_url
    from muretai_cli.door.serve import serve_door

    told = arrivals(json_out)

    def listening(at: Listening, config: DoorConfig, where: str) -> None:
        note(f"listening on {at.address} as {ident.did}"
             + (f" ({workers} workers)" if workers > 1 else ""))
        note(f"card: {base.join('/.well-known/agent-card.json')} (policy {config.policy}, "
             f"db {where})")
        if json_out:
            emit_json_line({"ok": True, "event": "listening", "time": int(time.time()),
                            "address": at.address, "url": base.text, "did": ident.did,
                            "policy": config.policy, "workers": workers})

    code = serve_door(
        ident.signing_key(),
        replace(checked, name=ident.name, org=membership, durable=durable,
                did_configuration=linkage, wba_allow_private=wba_allow_private,
                keystate=ident.keystate()),
        lambda: open_store(ident, db, durable=durable), host=host, port=port,
        workers=workers, policy=checked.policy if dm_policy else None,
        shared_store=is_postgres_url(db), http=http, on_listening=listening, on_event=told,
        on_message=responder, log=note)
    if code:
        raise typer.Exit(code)


def wba_text(wba: dict[str, Any]) -> str:
    """A Web Bot Auth verdict in a few words: ``wba verified [as DID]`` or ``wba refused
    (code)``. Every value in it came from a peer's request."""
    if wba.get("state") == "verified":
        return f"wba verified as {safe(wba.get('did'), limit=120)}"
    code = (wba.get("reason") or {}).get("code")
    return f"wba refused ({safe(code, limit=60)})"


def arrivals(json_out: bool) -> Callable[[dict[str, Any]], None]:
    """The door's event hook: a line per arrival on stderr; with ``--json``, a JSON line on
    stdout as well. Peer-supplied values pass through ``safe()`` before the terminal."""
    import threading

    lock = threading.Lock()  # a PostgreSQL door answers on a thread pool

    def told(event: dict[str, Any]) -> None:
        outcome = event["event"]
        extra = ""
        if outcome == "held":
            extra = f"  request {safe(event.get('requestId'), limit=80)}"
        elif outcome == "refused":
            extra = f"  {event.get('code')} {safe(event.get('reason'), limit=80)}"
        elif outcome == "answered":
            warning = event.get("warning")
            extra = f"  by {event.get('by')}" + (
                f"  warning {warning['code']}: {safe(warning['message'], limit=120)}"
                if warning else "")
        if event.get("wba"):
            extra += "  " + wba_text(event["wba"])
        line = (f"{when(event.get('time'))}  {outcome:<8} {safe(event.get('method'), limit=40)}"
                f" from {safe(event.get('from') or '-', limit=120)}"
                f" id {safe(event.get('messageId') or '-', limit=80)}{extra}")
        with lock:
            note(line)
            if json_out:
                emit_json_line({"ok": outcome != "refused" and "warning" not in event,
                                **event})

    return told


def issue(
    ctx: typer.Context,
    uses: Annotated[int, typer.Option("--uses", help="How many senders may redeem it.")],
    expires: Annotated[str, typer.Option("--expires", help="Lifetime: 30m, 1.5h, 7d, 2w.")] = "7d",
    purpose: Annotated[str | None, typer.Option("--purpose", help="Why it was issued.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Mint a contact grant, record it, and make it the card's contact. Prints the grant."""
    from muretai_cli.artifacts.grant import mint_grant
    from muretai_cli.cli._durations import parse_duration

    ttl = parse_duration(expires, name="--expires")
    if uses < 1:
        raise InputError("bad-uses", f"--uses {uses} must be at least 1")
    ident = _op_identity(ctx)
    now = int(time.time())
    grant = mint_grant(ident.signing_key(), uses=uses, now=now, ttl=ttl, purpose=purpose)
    store = open_store(ident, _op_db(ctx))
    try:
        store.add_grant(grant, now)
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "grant": grant})
    else:
        import json

        say(json.dumps(grant, indent=2, ensure_ascii=False))
        note(f"grant {grant['id']}: {uses} use(s), expires in {expires}")


def grants(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """List this door's grants with uses left."""
    ident = _op_identity(ctx)
    now = int(time.time())
    store = open_store(ident, _op_db(ctx))
    try:
        rows = [g.to_json(now) for g in store.grants()]
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "grants": rows})
        return
    for g in rows:
        left = f"{g['usesLeft']}/{g['uses']} left"
        purpose = f"  {safe(g['purpose'])}" if g["purpose"] else ""
        say(f"{g['id']}  {g['state']:<9}  {left:<12} exp {when(g['exp'])}{purpose}")
    if not rows:
        note("no grants yet: `muretai contact issue --as NAME --uses N`")


def revoke(
    ctx: typer.Context,
    grant_id: Annotated[str, typer.Argument(metavar="ID", help="The grant's id.")],
    json_out: JsonOpt = False,
) -> None:
    """Revoke a grant: it leaves the card, and its connections stop letting senders in."""
    ident = _op_identity(ctx)
    now = int(time.time())
    store = open_store(ident, _op_db(ctx))
    try:
        row = store.revoke(grant_id, now)
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "grant": row.to_json(now)})
    else:
        say(f"revoked {row.id}")
