"""``muretai probe URL``: which way into a site, given what you hold (GET only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from muretai_cli.cli._acting import KeysOpt
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, say
from muretai_cli.cli._text import safe
from muretai_cli.cli._visitout import (
    DEFAULT_MAX_BYTES,
    MaxBytesOpt,
    TimeoutOpt,
    make_client,
    progress,
)

if TYPE_CHECKING:
    from muretai_cli.visit.probe import ProbeReport


def register(app: typer.Typer) -> None:
    app.command("probe")(probe)


def _print(report: ProbeReport) -> None:
    hand = report.on_hand.to_json()
    say(f"probe of {safe(report.url)}")
    say("on hand: " + "  ".join(f"{k} {'yes' if v else 'no'}" for k, v in hand.items()))
    say(f"route  (order: {'the site' + chr(39) + 's' if report.order == 'site' else 'default'})")
    for i, way in enumerate(report.routes, 1):
        say(f"  {i}. {way.kind:<5} {safe(way.message)}")
    if not report.routes:
        say("  (none)")
    say("excluded")
    for way in report.excluded:
        say(f"  {way.kind:<5} {way.code}: {safe(way.message)}")
    for line in report.notes:
        say(f"note: {safe(line)}")


def probe(
    url: Annotated[str, typer.Argument(help="The site: a base URL (https://host[/path]) or "
                                            "its card URL.")],
    key: Annotated[str | None, typer.Option(
        "--key", metavar="NAME", help="You hold a signing key: this identity's.",
        show_default=False)] = None,
    token: Annotated[bool, typer.Option(
        "--token", help="You hold a credential for the site's MCP server.")] = False,
    browser: Annotated[bool, typer.Option(
        "--browser", help="You can run a browser yourself.")] = False,
    person: Annotated[bool, typer.Option(
        "--person", help="A person is in the browser tab on this site.")] = False,
    allow_private: Annotated[bool, typer.Option(
        "--allow-private", help="Allow loopback and private addresses.")] = False,
    timeout: TimeoutOpt = "30",
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Read the site's ways in (its Agent Card, MCP server card, a page declaring tools) and
    route or exclude each, with its reason, for what you hold; signposts are listed, never
    taken. GET only, under one deadline.

    Exit 0 when there is a way in, 2 when there is none; 3 when nothing answered.
    """
    from muretai_cli.site import check_public, site_base
    from muretai_cli.visit.probe import OnHand
    from muretai_cli.visit.probe import probe as run_probe

    base = site_base(url)
    check_public(base, allow_private=allow_private)
    if key is not None:
        from muretai_cli.cli._acting import own_identity

        own_identity(key, keys, option="--key")  # the key must exist to be on hand
    on_hand = OnHand(key=key is not None, token=token, browser=browser, person=person)
    with make_client(timeout, max_bytes) as client, progress(f"probing {url}"):
        report = run_probe(base, client=client, on_hand=on_hand)
    if json_out:
        emit_json(report.to_json())
    else:
        _print(report)
    if not report.ok:
        raise typer.Exit(2)
