"""Shared options and rendering for the visiting side's commands (card, handoff, contact),
and ``quoted()``, the one way untrusted multi-line text reaches a terminal."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._out import note, say
from muretai_cli.cli._text import safe, when

if TYPE_CHECKING:
    from rich.console import Console

    from muretai_cli.net import SafeClient
    from muretai_cli.visit.card import CardCheck
    from muretai_cli.visit.dm import DmReport
    from muretai_cli.visit.handoff import HandoffReport

TimeoutOpt = Annotated[str, typer.Option(
    "--timeout", metavar="DURATION",
    help="Deadline shared by every request of this command: seconds (1.5), or 30s, 2m.")]
MaxBytesOpt = Annotated[int, typer.Option(
    "--max-bytes", min=1, help="Abandon any response larger than this many bytes.")]
NowOpt = Annotated[int | None, typer.Option(
    "--now", help="Judge at this epoch second instead of the clock (for tests and CI).",
    show_default=False)]
DEFAULT_MAX_BYTES = 1024 * 1024
TIMEOUT_HINT = "raise --timeout, or try again later"  # for a command that has TimeoutOpt


def now_or_clock(now: int | None) -> int:
    return int(time.time()) if now is None else now


WbaOpt = Annotated[bool, typer.Option(
    "--wba", envvar="MURETAI_WBA", help="Sign every request with Web Bot Auth (RFC 9421) as "
                                        "the --as identity (also MURETAI_WBA=1).")]
WbaAgentOpt = Annotated[str | None, typer.Option(
    "--wba-agent", envvar="MURETAI_WBA_AGENT", show_default=False,
    help="Signature-Agent: where your key directory is served (your door's URL; default your "
         "DID-addressed site).")]
WbaAsOpt = Annotated[str | None, typer.Option(
    "--as", metavar="NAME|DID", help="The identity that signs with --wba (default "
                                     "$MURETAI_AS).", show_default=False)]


def make_client(timeout: str, max_bytes: int, *,
                signer: Callable[[str], dict[str, str]] | None = None) -> SafeClient:
    """The one HTTP client of a command (imports httpx only now)."""
    from muretai_cli.cli._durations import parse_seconds
    from muretai_cli.net import SafeClient

    return SafeClient(timeout=parse_seconds(timeout), max_bytes=max_bytes, signer=signer,
                      deadline_hint=TIMEOUT_HINT)


def wba_signer(wba: bool, name: str | None, keys: Path | None, agent: str | None
               ) -> Callable[[str], dict[str, str]] | None:
    """The request signer ``--wba`` asks for (None without it); ``--as`` names the key."""
    if not wba:
        return None
    from muretai_cli.cli._acting import chosen_identity, own_identity

    name = chosen_identity(name)
    if name is None:
        from muretai_cli.errors import InputError

        raise InputError("wba-needs-identity", "--wba signs as an identity: add --as NAME "
                                               "(or set $MURETAI_AS)")
    from muretai_cli.visit.wba import request_signer

    return request_signer(own_identity(name, keys).signing_key(), agent=agent)


def client_for(seconds: float, max_bytes: int, *, deadline_hint: str = TIMEOUT_HINT
               ) -> SafeClient:
    """A safe client for one request (a relay long-poll or a deposit has its own deadline),
    for a command with ``--timeout``; one without passes its own ``deadline_hint``."""
    from muretai_cli.net import SafeClient

    return SafeClient(timeout=seconds, max_bytes=max_bytes, deadline_hint=deadline_hint)


def plain_console(**options: Any) -> Console:
    """A rich console that renders strings as they are: no markup, no emoji codes, no
    highlighting, so ``[/x]`` or ``did:key:`` from a URL, file name or peer stays text."""
    from rich.console import Console

    return Console(markup=False, emoji=False, highlight=False,
                   no_color=bool(os.environ.get("NO_COLOR")), **options)


@contextmanager
def progress(text: str, *, console: Console | None = None) -> Iterator[None]:
    """A spinner on stderr while the network works, only on a terminal (NO_COLOR honoured).

    ``text`` may carry untrusted or user-typed text; it is shown as a ``Text``, never markup.
    """
    if console is None:
        if not sys.stderr.isatty():
            yield
            return
        console = plain_console(stderr=True)
    from rich.text import Text

    with console.status(Text(safe(text))):
        yield


def quoted(text: object, *, indent: str = "  ", limit: int | None = 4000) -> list[str]:
    """Untrusted multi-line text for a terminal: every line behind ``| ``, so the text cannot
    forge a line of our own output (a header, a verdict) however it breaks its lines."""
    lines = safe(text, multiline=True, limit=limit).splitlines() or [""]
    return [f"{indent}| {line}" for line in lines]


def card_lines(check: CardCheck, *, indent: str = "") -> list[str]:
    """A card check for people. Every string that came from the card goes through safe()."""
    card = check.card or {}
    status = "ok" if check.ok else "REFUSED"
    lines = [f"{indent}{status:8}{check.base.text}  {safe(check.did or '-')}"]
    if isinstance(card.get("name"), str):
        lines.append(f"{indent}  name        {safe(card['name'], limit=200)}")
    if check.endpoint:
        lines.append(f"{indent}  url         {safe(check.endpoint, limit=300)}")
    sig: str = check.signature
    if check.envelope_ts is not None:
        sig += f" (signed {when(check.envelope_ts)})"
    lines.append(f"{indent}  signature   {sig}")
    lines.append(f"{indent}  pin         {check.pin}")
    if check.contact is not None:
        lines.append(f"{indent}  contact     {verdict_line(check.contact.to_json())}")
    if check.org is not None:
        lines.append(f"{indent}  org         {verdict_line(check.org.to_json())}")
    for reason in check.verdict.errors:
        lines.append(f"{indent}  refused     {reason.code}: {safe(reason.detail, limit=500)}")
    return lines


def verdict_line(doc: dict[str, Any]) -> str:
    facts = doc.get("facts") or {}
    errors = [r for r in doc.get("reasons", []) if r["severity"] == "error"]
    if errors:
        return "refused: " + "; ".join(f"{r['code']}: {safe(r['message'], limit=300)}"
                                       for r in errors)
    if doc.get("subject") == "contact":
        text = f"grant {safe(facts.get('id'))}, {facts.get('uses')} use(s), expires " \
               f"{when(facts.get('exp'))}"
        if facts.get("purpose"):
            text += f", purpose {safe(facts['purpose'], limit=200)!r}"
        return text
    if doc.get("subject") == "org":
        if facts.get("trusted"):
            text = f"{safe(facts.get('trustedName'), limit=200)} (trusted; " \
                   f"{safe(facts.get('orgDid'))})"
        else:
            text = f"{safe(facts.get('claimedName'), limit=200)!r} (as claimed, not in your " \
                   f"trust list; {safe(facts.get('orgDid'))})"
        if facts.get("role"):
            text += f", role {safe(facts['role'], limit=100)}"
        return text
    return "ok"


def warn_reasons(label: str, reasons: list[dict[str, Any]]) -> None:
    for r in reasons:
        if r["severity"] == "warning":
            note(f"warning: {safe(label)}: {r['code']}: {safe(r['message'], limit=500)}")


def print_card(check: CardCheck) -> None:
    for line in card_lines(check):
        say(line)
    warn_reasons(check.base.text, [r.to_json() for r in check.verdict.reasons])


def where(source: str, index: int) -> str:
    """An entry's place: ``_meta.handoff#0``, or the bare source when the whole envelope is
    meant (index -1)."""
    return f"{safe(source, limit=80)}#{index}" if index >= 0 else safe(source, limit=80)


def handoff_lines(label: str, report: HandoffReport) -> list[str]:
    head = "FOLLOW" if report.exit_code == 0 else "REFUSE"
    lines = [f"{head}  {safe(label)}  origin {report.origin.text}"]
    if not report.handoff.present:
        lines.append("  no handoff: the result carries no valid entry")
    for item in report.entries:
        entry = item.entry
        target = entry.to or entry.url or entry.server or entry.endpoint or entry.card or ""
        mark = "ok" if item.verdict.ok else "refused"
        extra = "  (needs a person)" if item.needs_person else ""
        lines.append(f"  [{where(entry.source, entry.index)}] {entry.kind:3} "
                     f"{safe(target, limit=200)}  {mark}{extra}")
        for r in item.verdict.reasons:
            lines.append(f"      {r.severity}: {r.code}: {safe(r.detail, limit=500)}")
    for dropped in report.handoff.dropped:
        lines.append(f"  dropped [{where(dropped.source, dropped.index)}]: "
                     f"{safe(dropped.reason, limit=200)}")
    if report.card is not None and report.card.org is not None:
        lines.append(f"  org: {verdict_line(report.card.org.to_json())}")
    if report.card_error is not None:
        lines.append(f"  card: {report.card_error.code}: {safe(report.card_error.detail)}")
    if report.card is not None:  # every card finding --json carries, warnings included
        for r in report.card.verdict.reasons:
            lines.append(f"  card: {r.severity}: {r.code}: {safe(r.detail, limit=500)}")
    if report.ignored:
        lines.append(f"  ignored (identity comes only from your key): "
                     f"{safe(', '.join(report.ignored), limit=300)}")
    suggestion = report.suggested_message
    if suggestion is not None:
        lines.append("  suggested message (untrusted text from the site):")
        lines.extend(quoted(suggestion, indent="    "))
    return lines


def bound_words(binding: str | None) -> str:
    """What a verified reply's signature proves, said plainly (never just "verified")."""
    if binding == "message":
        return "verified, bound to this message"
    return "verified, bound to the conversation"


def dm_lines(report: DmReport) -> list[str]:
    """The reply on stdout (safe), only as the door's when verified."""
    reply = report.reply
    if reply.kind == "lost":
        return [f"delivered to {report.to}; the reply was lost"]
    if reply.receipt:  # the door's own words, not an answer: said so before they are quoted
        return [f"receipt from {report.to} ({bound_words(reply.binding)}): delivered, "
                "no reply yet", *quoted(reply.text or "", limit=2000)]
    if reply.verdict.ok:
        head = f"reply from {report.to} ({bound_words(reply.binding)})"
        if reply.state:
            head += f", task {safe(reply.state, limit=40)}"
        return [head, *quoted(reply.text or "", limit=20000)]
    lines = [f"UNVERIFIED reply ({reply.kind}) at {safe(report.endpoint)}"]
    for r in reply.verdict.errors:
        lines.append(f"  {r.code}: {safe(r.detail, limit=500)}")
    if reply.text:
        lines.append("  text (untrusted, not verified as the door's):")
        lines.extend(quoted(reply.text, indent="    "))
    return lines


def peer_refusal_lines(data: dict[str, Any]) -> list[str]:
    """A door's refusal details for stderr: JSON-RPC code, Retry-After, gate text (untrusted)."""
    lines: list[str] = []
    rpc = data.get("rpcError")
    if isinstance(rpc, dict):
        gate = rpc.get("data")
        line = f"  door error {safe(rpc.get('code'))}: {safe(rpc.get('message'), limit=300)}"
        if isinstance(gate, dict) and gate.get("reason") is not None:
            line += f" (reason: {safe(gate['reason'], limit=100)})"
        lines.append(line)
        if isinstance(gate, dict):
            for key in ("message", "agentHint", "requestId", "remedy"):
                if key in gate:
                    lines.append(f"  {key} (untrusted): {safe(gate[key], limit=500)}")
    if "retryAfter" in data:
        lines.append(f"  retry after: {data['retryAfter']} s (nothing was retried)")
    return lines
