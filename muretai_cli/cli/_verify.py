"""``muretai verify``: offline verdicts with JSON reports and exit codes, for people and CI.

Every command takes several FILE arguments, or JSON Lines on stdin with ``-``, and reports
each; the exit code is the worst of them (2 unreadable > 1 refused > 0 ok).
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from muretai_cli.cli import _intro, _verify_artifacts, _verify_keys, _verify_web
from muretai_cli.cli._batch import NowOpt, verify_batch
from muretai_cli.cli._dids import did_opt
from muretai_cli.cli._formats import FormatOpt
from muretai_cli.cli._input import FilesArg
from muretai_cli.cli._out import JsonOpt

app = typer.Typer(help="Verify signed artifacts offline (messages, cards, grants, orgs).",
                  no_args_is_help=True)


@app.command("message")
def message(
    files: FilesArg,
    to: Annotated[str, did_opt("--to", "Your DID: the recipient you expect.")],
    now: NowOpt = None,
    window: Annotated[int | None, typer.Option(
        "--window", min=0, show_default=False,
        help="Freshness window, seconds (±); default: the seam's message window, 300.")] = None,
    fmt: FormatOpt = "text",
    json_out: JsonOpt = False,
) -> None:
    """Verify signed A2A messages (message/send requests or bare messages) addressed to --to."""
    from muretai_cli.seam import MESSAGE_WINDOW
    from muretai_cli.visit.offline import check_message

    span = MESSAGE_WINDOW if window is None else window
    when = int(time.time()) if now is None else now
    verify_batch(files, json_out,
                 lambda doc: check_message(doc, to_did=to, now=when, window=span),
                 lambda item: f"from {item.get('from')}", fmt=fmt)


@app.command("card")
def card(
    files: FilesArg,
    did: Annotated[str, did_opt("--did", "The DID the card must name.")],
    origin: Annotated[str | None, typer.Option(
        "--origin", help="The base URL the card must name (its url).")] = None,
    now: NowOpt = None,
    fmt: FormatOpt = "text",
    json_out: JsonOpt = False,
) -> None:
    """Verify signed Agent Card envelopes ({v, typ, card, ts, sig}) under --did."""
    from muretai_cli.urls import base_from_any
    from muretai_cli.visit.offline import check_card_envelope

    base = base_from_any(origin, require_https=False) if origin else None
    when = int(time.time()) if now is None else now
    verify_batch(files, json_out,
                 lambda doc: check_card_envelope(doc, did=did, now=when, origin=base),
                 _card_summary, fmt=fmt)


def _card_summary(item: dict[str, object]) -> str:
    url = item.get("url")
    where = f"at {url}" if isinstance(url, str) and url else "(the card names no url)"
    return f"{item.get('did')} {where}"


_verify_artifacts.register(app)
_verify_keys.register(app)
_verify_web.register(app)
_intro.register_verify(app)
