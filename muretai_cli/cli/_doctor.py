"""``muretai doctor [--as NAME] [--peer URL]``: a read-only check-up that says the next step."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from muretai_cli.cli._acting import AsOpt, DbOpt, KeysOpt, chosen_identity
from muretai_cli.cli._db import fix_command
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, say
from muretai_cli.cli._text import safe
from muretai_cli.cli._visitout import TimeoutOpt

if TYPE_CHECKING:
    from muretai_cli.doctor import Finding

PeerOpt = Annotated[str | None, typer.Option(
    "--peer", help="A door or site (base URL) to compare this machine's clock with.",
    show_default=False)]


def doctor(
    as_: AsOpt = None,
    peer: PeerOpt = None,
    db: DbOpt = None,
    keys: KeysOpt = None,
    timeout: TimeoutOpt = "10",
    json_out: JsonOpt = False,
) -> None:
    """Check this machine's muretai home without changing it; each line is ok, or a problem
    and the command that fixes it. Exit 1 when there is a problem."""
    from muretai_cli.doctor import (
        Finding,
        check_clock,
        check_door_store,
        check_home,
        check_identities,
        check_pins,
        check_relay,
    )
    from muretai_cli.home import KeyStore, home_dir, keys_dir
    from muretai_cli.seam import MESSAGE_WINDOW

    store = KeyStore(keys_dir(keys))
    findings = check_home(home_dir(), store.root)
    named = chosen_identity(as_)
    if named and named.startswith("did:"):  # checked by its name (a DID names no file)
        named = store.name_of(named) or named
    names = [named] if named else store.names()
    if not names:
        findings.append(Finding("identities", "problem", f"no identity in {store.root}",
                                "muretai id new NAME"))
    checked, loaded = check_identities(store, names)
    findings += checked
    from muretai_cli.cli._durations import parse_seconds
    from muretai_cli.cli._visitout import client_for
    from muretai_cli.home import Profiles

    profiles = Profiles()
    for ident in loaded:
        findings.append(check_door_store(ident, db, fix=fix_command(ident.name, db)))
        findings.append(check_relay(ident, profiles.relay_of(ident.did), client_for=client_for,
                                    now=int(time.time()), timeout=parse_seconds(timeout)))
    findings.append(check_pins())
    if peer is None:
        findings.append(Finding("clock", "skipped", "give --peer URL to compare this clock "
                                                    "with a door's"))
    else:
        from muretai_cli.cli._visitout import DEFAULT_MAX_BYTES, make_client
        from muretai_cli.urls import base_from_any

        base = base_from_any(peer)
        with make_client(timeout, DEFAULT_MAX_BYTES) as client:
            findings.append(check_clock(client, base, local=time.time(),
                                        window=MESSAGE_WINDOW))
    _render(findings, json_out)


def _render(findings: list[Finding], json_out: bool) -> None:
    problems = sum(f.status == "problem" for f in findings)
    if json_out:
        emit_json({"ok": problems == 0, "problems": problems,
                   "checks": [f.to_json() for f in findings]})
    else:
        for f in findings:
            say(f"{f.status:<8} {f.check:<22} {safe(f.message, limit=300)}")
            if f.fix:
                say(f"{'':<8} {'':<22} fix: {safe(f.fix, limit=300)}")
        say(f"{problems} problem(s)" if problems else "all good")
    if problems:
        raise typer.Exit(1)
