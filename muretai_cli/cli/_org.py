"""``muretai org``: attest memberships, and the local trust list of org DIDs."""

from __future__ import annotations

from typing import Annotated

import typer

from muretai_cli.cli._acting import AsOpt, KeysOpt, load_identity
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe

app = typer.Typer(no_args_is_help=True)


def _org_did(did: str, name: str = "DID") -> str:
    from muretai_cli.cli._dids import did_option

    return did_option(did, name)


@app.command("trust")
def trust(
    did: Annotated[str, typer.Argument(help="The org's DID.")],
    name: Annotated[str, typer.Option("--name", help="The name you know this org by.")],
    json_out: JsonOpt = False,
) -> None:
    """Trust an org DID: its memberships then show your name for it, not the claimed one."""
    import time

    from muretai_cli.home import TrustList

    entry = TrustList().add(_org_did(did), name, int(time.time()))
    if json_out:
        emit_json({"ok": True, "trusted": entry.to_json()})
    else:
        say(f"trusted {entry.did} as {safe(entry.name)}")


@app.command("list")
def list_(json_out: JsonOpt = False) -> None:
    """List trusted org DIDs."""
    from muretai_cli.home import TrustList

    store = TrustList()
    rows = store.all()
    if json_out:
        emit_json({"ok": True, "orgs": [r.to_json() for r in rows]})
        return
    for row in rows:
        say(f"{row.did}\t{safe(row.name)}")
    if not rows:
        note(f"no trusted orgs in {store.path}")


@app.command("untrust")
def untrust(
    did: Annotated[str, typer.Argument(help="The org DID to remove.")],
    json_out: JsonOpt = False,
) -> None:
    """Remove an org DID from the trust list."""
    from muretai_cli.errors import Refused
    from muretai_cli.home import TrustList

    entry = TrustList().remove(_org_did(did))
    if entry is None:
        raise Refused("not-trusted", f"{did[:120]} is not in the trust list")
    if json_out:
        emit_json({"ok": True, "removed": entry.to_json()})
    else:
        say(f"untrusted {entry.did} ({safe(entry.name)})")


@app.command("attest")
def attest(
    member: Annotated[str, typer.Option("--member", help="The member agent's DID.")],
    name: Annotated[str, typer.Option("--name", help="The org's name, as it will be claimed.")],
    as_: AsOpt = None,
    role: Annotated[str | None, typer.Option("--role", help="The member's role.",
                                             show_default=False)] = None,
    expires: Annotated[str | None, typer.Option(
        "--expires", help="Valid for this long (e.g. 12h, 30d, 1.5w); default: no expiry.",
        show_default=False)] = None,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Sign an org membership for a member DID; prints the membership JSON on stdout."""
    import json
    import time

    from muretai_cli.artifacts.org import attest_member
    from muretai_cli.cli._durations import parse_duration

    ttl = parse_duration(expires, name="--expires") if expires is not None else None
    key = load_identity(as_, keys).signing_key()
    doc = attest_member(key, member_did=_org_did(member, "--member"), org_name=name,
                        now=int(time.time()), role=role, ttl=ttl)
    if json_out:
        emit_json({"ok": True, "membership": doc})
    else:
        say(json.dumps(doc, indent=2, ensure_ascii=False))
