"""``muretai site check URL``: what a site tells agents, and which of it can be proven."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from muretai_cli.cli._acting import KeysOpt
from muretai_cli.cli._formats import CiCase, FormatOpt, check_format, emit_ci
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, say
from muretai_cli.cli._text import safe
from muretai_cli.cli._visitout import (
    DEFAULT_MAX_BYTES,
    MaxBytesOpt,
    NowOpt,
    TimeoutOpt,
    WbaAgentOpt,
    WbaOpt,
    make_client,
    now_or_clock,
    progress,
    wba_signer,
)

if TYPE_CHECKING:
    from muretai_cli.seam import SigningKey
    from muretai_cli.site import SiteReport

app = typer.Typer(no_args_is_help=True, help="Check what a website tells agents.")


def _cases(report: SiteReport) -> list[CiCase]:
    out = []
    for f in report.findings:
        message = f.detail
        if f.remedy is not None:
            message += f"\nchange: {f.remedy.change}\nrule: {f.remedy.rule}\n{f.remedy.note}"
        out.append(CiCase(f"site {report.url}", f"{f.check}: {f.title}", f.status, message))
    return out


def _print(report: SiteReport) -> None:
    say(f"site check of {safe(report.url)}")
    for f in report.findings:
        say(f"{f.status:<5} {f.check:<18} {safe(f.detail)}")
        if f.remedy is not None:
            say(f"      change: {f.remedy.change}")
            say(f"      rule:   {f.remedy.rule}")
            say(f"      {f.remedy.note}")
    counts = report.counts()
    say(", ".join(f"{n} {s}" for s, n in counts.items()) + " (findings, not a score)")


@app.command("check")
def check(
    url: Annotated[str, typer.Argument(help="The site: a base URL (https://host[/path]) or its "
                                            "card URL.")],
    allow_private: Annotated[bool, typer.Option(
        "--allow-private", help="Allow loopback and private addresses (your own staging "
                                "door).")] = False,
    as_: Annotated[str | None, typer.Option(
        "--as", help="Also knock signed as this identity and verify the signed reply (the "
                     "knock reaches the door's inbox or requests).", show_default=False)] = None,
    fmt: FormatOpt = "text",
    timeout: TimeoutOpt = "30",
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    now: NowOpt = None,
    keys: KeysOpt = None,
    wba: WbaOpt = False,
    wba_agent: WbaAgentOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Follow the site to its Agent Card and report PASS / FAIL / WARN / INFO per check.

    Exit 0 unless a check FAILED (1); 3 when the site cannot be reached.
    """
    from muretai_cli.home import PinStore
    from muretai_cli.site import check_public, check_site, site_base

    form = check_format(fmt, json_out)
    base = site_base(url)
    check_public(base, allow_private=allow_private)
    signer = _signer(as_, keys)
    with make_client(timeout, max_bytes, signer=wba_signer(wba, as_, keys, wba_agent)) \
            as client, progress(f"checking {url}"):
        report = check_site(base, client=client, now=now_or_clock(now), pins=PinStore(),
                            signer=signer)
    if form == "json":
        emit_json(report.to_json())
    elif form in ("junit", "github"):
        emit_ci(_cases(report), form, name="muretai site check")
    else:
        _print(report)
    if not report.ok:
        raise typer.Exit(1)


def _signer(name: str | None, keys: Path | None) -> SigningKey | None:
    if name is None:
        return None
    from muretai_cli.cli._acting import own_identity

    return own_identity(name, keys).signing_key()
