"""``verify introduction`` and ``sign introduction``: the AgentIntroduction credential,
offline, for people and CI. The subject and the recipient come from the command line,
never from the file."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from muretai_cli.cli._acting import AsOpt, KeysOpt, load_identity
from muretai_cli.cli._batch import NowOpt, verify_batch
from muretai_cli.cli._dids import did_opt
from muretai_cli.cli._formats import FormatOpt
from muretai_cli.cli._input import FilesArg, read_input
from muretai_cli.cli._out import JsonOpt


def _summary(item: dict[str, Any]) -> str:
    how = item.get("provenance")
    if how == "requested":
        how = f"requested at {item.get('requestedAt')}"
    return f"{item.get('subject')} introduced to {item.get('introducedTo')} by " \
           f"{item.get('issuer')}, trust {item.get('trustLevelBp')}/1000, {how}, until " \
           f"{item.get('validUntil')}"


def register_verify(app: typer.Typer) -> None:
    """Add ``verify introduction`` to the ``verify`` group."""

    @app.command("introduction")
    def verify_introduction(
        files: FilesArg,
        subject: Annotated[str, did_opt("--subject", "The DID being introduced.")],
        to: Annotated[str, did_opt("--to", "The recipient you expect (usually you).")],
        now: NowOpt = None,
        fmt: FormatOpt = "text",
        json_out: JsonOpt = False,
    ) -> None:
        """Verify introductions: the issuer's signature, --subject, --to, expiry, provenance."""
        from muretai_cli.artifacts.introduction import verify_introduction as check_intro
        from muretai_cli.verdict import Verdict

        clock = int(time.time()) if now is None else now

        def check(doc: object) -> Verdict:
            intro = check_intro(doc, subject=subject, recipient=to, now=clock)
            return Verdict.of("introduction", [], intro.facts())

        verify_batch(files, json_out, check, _summary, fmt=fmt)


def register_sign(app: typer.Typer, emit: Callable[[object], None]) -> None:
    """Add ``sign introduction`` (and ``sign introduction-request``) to the ``sign`` group."""

    @app.command("introduction")
    def sign_introduction(
        subject: Annotated[str, did_opt("--subject", "The DID you vouch for.")],
        to: Annotated[str, did_opt("--to", "The DID it may reach.")],
        as_: AsOpt = None,
        expertise: Annotated[list[str] | None, typer.Option(
            "--expertise", help="What you vouch they know (repeatable).")] = None,
        trust: Annotated[str, typer.Option(
            "--trust", help="How strongly, 0.0–1.0 (at most three places).")] = "1.0",
        valid: Annotated[str, typer.Option(
            "--valid", help="How long it is valid, e.g. 30d.")] = "30d",
        proactive: Annotated[bool, typer.Option(
            "--proactive", help="You vouch unasked (no --request).")] = False,
        request: Annotated[str | None, typer.Option(
            "--request", help="The subject's signed request (a file, or -).",
            show_default=False)] = None,
        endpoint: Annotated[str | None, typer.Option(
            "--endpoint", help="Your public URL, signed in (issuerEndpoint).",
            show_default=False)] = None,
        now: Annotated[int | None, typer.Option("--now", help="issuanceDate to sign.")] = None,
        keys: KeysOpt = None,
        json_out: Annotated[bool, typer.Option(
            "--json", help="Accepted for symmetry: the output is one JSON document.")] = False,
    ) -> None:
        """Print a signed introduction of --subject to --to: requested (--request FILE, the
        subject's signed ask) or --proactive; exactly one of them."""
        from muretai_cli.artifacts.introduction import mint_introduction, trust_bp
        from muretai_cli.cli._durations import parse_duration
        from muretai_cli.errors import InputError, Refused
        from muretai_cli.seam import parse_document

        if proactive == (request is not None):
            raise InputError("usage", "give exactly one of --proactive and --request FILE",
                             hint="--request takes the subject's signed introduce-me-to: "
                                  "message (`muretai sign introduction-request`)")
        asked = None
        if request is not None:
            asked = parse_document(read_input(request))
            if not isinstance(asked, dict):
                raise InputError("not-a-request", "the request is a JSON object")
        try:
            bp = trust_bp(trust)
        except Refused as exc:  # a usage mistake here, not a refused credential
            raise InputError(exc.code, exc.detail) from None
        key = load_identity(as_, keys).signing_key()
        when = int(time.time()) if now is None else now
        emit(mint_introduction(key, subject=subject, to=to, now=when,
                               expertise=expertise or [], trust=bp,
                               valid_for=parse_duration(valid, name="--valid"),
                               request=asked, issuer_endpoint=endpoint))

    @app.command("introduction-request")
    def sign_request(
        introducer: Annotated[str, did_opt("--introducer", "Who you ask to introduce you.")],
        to: Annotated[str, did_opt("--to", "Whom you want to meet.")],
        as_: AsOpt = None,
        now: Annotated[int | None, typer.Option("--now", help="Timestamp to sign.")] = None,
        keys: KeysOpt = None,
        json_out: Annotated[bool, typer.Option(
            "--json", help="Accepted for symmetry: the output is one JSON document.")] = False,
    ) -> None:
        """Print your signed request (introduce-me-to: --to) addressed to --introducer."""
        from muretai_cli.artifacts.introduction import mint_request

        key = load_identity(as_, keys).signing_key()
        when = int(time.time()) if now is None else now
        emit(mint_request(key, introducer=introducer, target=to, now=when))
