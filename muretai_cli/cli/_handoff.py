"""``muretai handoff check``: judge a WebMCP tool result's handoff entries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._batch import error_result
from muretai_cli.cli._formats import FormatOpt, batch_cases, check_format, emit_ci
from muretai_cli.cli._input import iter_documents, read_input
from muretai_cli.cli._json import JsonList, emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe
from muretai_cli.cli._visitout import (
    DEFAULT_MAX_BYTES,
    MaxBytesOpt,
    NowOpt,
    TimeoutOpt,
    handoff_lines,
    make_client,
    now_or_clock,
    progress,
)

if TYPE_CHECKING:
    from muretai_cli.net import SafeClient
    from muretai_cli.urls import BaseUrl
    from muretai_cli.visit.handoff import CardSource, HandoffReport

app = typer.Typer(no_args_is_help=True)

OriginOpt = Annotated[str, typer.Option("--origin", help="The site the result came from "
                                        "(base URL as dialled).")]
PersonOpt = Annotated[bool, typer.Option("--person", help="A person is present: ui entries may "
                                         "be opened by them.")]
OfflineOpt = Annotated[bool, typer.Option("--offline", help="No network: judge against --card.")]
CardOpt = Annotated[str | None, typer.Option("--card", help="The origin's card: a signed "
                                             "envelope or a plain card (plain = unsigned).",
                                             show_default=False)]
RequireSignedOpt = Annotated[bool, typer.Option(
    "--require-signed", help="An unsigned card vouches for nothing.")]
# handoff check refuses an unsigned card by default; this is the named way to accept one.
ALLOW_UNSIGNED = "--allow-unsigned-card"
AllowUnsignedOpt = Annotated[bool, typer.Option(
    ALLOW_UNSIGNED, help="Let a card without a signed envelope vouch for entries (unsafe: "
                         "anyone on the path could have written it). Default: refused.")]


def offline_cards(origin: BaseUrl, card: str | None, now: int, require_signed: bool
                  ) -> CardSource:
    from muretai_cli.errors import InputError, Refused
    from muretai_cli.home import PinStore, TrustList
    from muretai_cli.visit.card import card_from_body
    from muretai_cli.visit.handoff import OfflineCards

    doc = None
    if card is not None:
        try:
            doc = card_from_body(read_input(card), card)
        except Refused as exc:  # the user's own file: unreadable input (2), not a refusal
            raise InputError("bad-card-file", exc.detail,
                             hint="--card takes a card JSON file (signed envelope or plain)") \
                from None
    return OfflineCards(origin, doc, now=now, pins=PinStore(), trust=TrustList(),
                        require_signed=require_signed)


def online_cards(origin: BaseUrl, client: SafeClient, now: int, require_signed: bool
                 ) -> CardSource:
    from muretai_cli.home import PinStore, TrustList
    from muretai_cli.visit.handoff import OnlineCards

    return OnlineCards(origin, client, now=now, pins=PinStore(), trust=TrustList(),
                       require_signed=require_signed)


def report_item(label: str, report: HandoffReport) -> dict[str, Any]:
    reasons = []
    refused = report.refusal()
    if refused is not None:
        code, message = refused
        reasons.append({"code": code, "message": message, "severity": "error",
                        "detail": message})
    doc = report.to_json()
    doc.pop("ok")
    return {"input": label, "ok": report.exit_code == 0, "reasons": reasons, **doc,
            "_exit": report.exit_code}


_OUTCOMES = ((0, "followable"), (1, "with no followable dm entry"), (2, "unreadable or malformed"),
             (3, "card unreachable"), (4, "card refused by the peer"), (5, "timed out"))


def closing_note(codes: list[int], exit_code: int) -> str:
    """What the batch came to, counted by outcome: the exit code is the worst of them."""
    parts = [f"{codes.count(code)} {what}" for code, what in _OUTCOMES if codes.count(code)]
    return f"exit {exit_code}: {len(codes)} input(s): " + ", ".join(parts)


@app.command("check")
def check(
    files: Annotated[list[str], typer.Argument(help="Tool results (JSON), or - for JSON Lines "
                                               "on stdin.")],
    origin: OriginOpt,
    person: PersonOpt = False,
    offline: OfflineOpt = False,
    card: CardOpt = None,
    require_signed: Annotated[bool, typer.Option(
        "--require-signed", hidden=True,
        help="The default: an unsigned card vouches for nothing.")] = False,
    allow_unsigned: AllowUnsignedOpt = False,
    timeout: TimeoutOpt = "30",
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    now: NowOpt = None,
    skip_empty: Annotated[bool, typer.Option(
        "--skip-empty", help="A result with no handoff at all passes (pre-commit over many "
                             "files) instead of failing.")] = False,
    fmt: FormatOpt = "text",
    json_out: JsonOpt = False,
) -> None:
    """Check each entry of a result's handoff; exit 0 when a dm entry may be followed.

    Only _meta.handoff, handoff and the legacy muretai key are read. On an ordinary origin
    the origin's card is fetched (or taken from --card) and must name each entry's `to`;
    it must be signed (a signed envelope) unless --allow-unsigned-card.
    """
    from muretai_cli.errors import InputError, MuretaiError
    from muretai_cli.urls import base_from_any, did_site_key
    from muretai_cli.visit.handoff import check_handoff_bytes

    form = check_format(fmt, json_out)
    if require_signed and allow_unsigned:
        raise InputError("usage", f"--require-signed and {ALLOW_UNSIGNED} contradict each other",
                         hint="a signed card is required by default: give neither, or "
                              f"{ALLOW_UNSIGNED} alone")
    require_signed = not allow_unsigned
    base = base_from_any(origin)
    if offline and card is None and did_site_key(base) is None:  # a DID-addressed site needs none
        raise InputError("usage", "--offline needs the origin's card: give --card FILE",
                         hint="or leave out --offline to fetch the card from --origin")
    clock = now_or_clock(now)
    client: SafeClient | None = None
    if offline or card is not None:
        cards = offline_cards(base, card, clock, require_signed)
    else:
        client = make_client(timeout, max_bytes)
        cards = online_cards(base, client, clock, require_signed)
    # Each input is rendered as it is checked: text printed, --json spooled in a JsonList,
    # CI formats one small row; memory stays flat however many results a CI job checks.
    ci = form in ("junit", "github")
    listed = JsonList() if form == "json" else None
    cases: list[Any] = []
    codes: list[int] = []

    def render(result: dict[str, Any], lines: list[str]) -> None:
        code = int(result.pop("_exit", 0))
        codes.append(code)
        if ci:
            cases.extend(batch_cases([result], [code], suite="muretai handoff check"))
        elif listed is not None:
            listed.append(result)
        else:
            for line in lines:
                say(safe(line, limit=None) if line.startswith("ERROR") else line)

    unsigned = 0  # results whose card was there but unsigned

    try:
        for label, raw in iter_documents(files):
            if isinstance(raw, MuretaiError):
                render(error_result(label, raw), [f"ERROR   {label}  {raw.code}: {raw.detail}"])
                continue
            try:
                with progress(f"checking {label}"):
                    report = check_handoff_bytes(raw, cards, person=person, now=clock)
            except MuretaiError as exc:
                render(error_result(label, exc), [f"ERROR   {label}  {exc.code}: {exc.detail}"])
                continue
            if skip_empty and not report.handoff.sources:
                render({"input": label, "ok": True, "skipped": True, "reasons": [], "_exit": 0},
                       [f"SKIP    {safe(label)}  no handoff in this result (--skip-empty)"])
                continue
            if report.card is not None and report.card.signature == "unsigned":
                unsigned += 1
            render(report_item(label, report), handoff_lines(label, report))
    finally:
        if client is not None:
            client.close()
    if not codes:
        raise InputError("no-input", "no inputs were given (stdin was empty)",
                         hint="give tool result files, or JSON Lines on stdin with -")
    exit_code = max(codes)
    if unsigned and require_signed:
        note(f"note: {unsigned} result(s) judged against an unsigned card, which vouches for "
             f"nothing: serve the signed envelope (.well-known/agent-card.sig.json; give it "
             f"with --card), or accept the plain card with {ALLOW_UNSIGNED} (unsafe)")
    elif unsigned:
        note(f"note: {unsigned} result(s) judged against an UNSIGNED card ({ALLOW_UNSIGNED}): "
             "its entries are vouched for by a card anyone on the path could have written")
    if ci:
        emit_ci(cases, form, name="muretai handoff check")
    elif listed is not None:
        emit_json({"ok": exit_code == 0, "results": listed})
    elif exit_code:
        note(closing_note(codes, exit_code))
    raise typer.Exit(exit_code)
