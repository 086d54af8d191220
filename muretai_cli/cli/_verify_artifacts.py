"""``verify grant`` and ``verify org``: batch checks of our signed artifacts."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from muretai_cli.cli._out import (
    JsonOpt,
    error_result,
    handles_errors,
    iter_documents,
    render_batch,
    result_of,
)

FilesArg = Annotated[list[str], typer.Argument(help="Files, or - for JSON Lines on stdin.")]
NowOpt = Annotated[int | None, typer.Option("--now", help="Judge at this epoch second.",
                                            show_default=False)]


def _grant_summary(item: dict[str, Any]) -> str:
    return f"grant {item.get('id')} by {item.get('did')}, {item.get('uses')} use(s), " \
           f"exp {item.get('exp')}"


def _org_summary(item: dict[str, Any]) -> str:
    return f"{item.get('agentDid')} member of {item.get('orgName')!r} (as claimed by " \
           f"{item.get('orgDid')})"


def register(app: typer.Typer) -> None:
    """Add the artifact verify commands to the ``verify`` group."""

    @app.command("grant")
    @handles_errors
    def verify_grant(
        files: FilesArg,
        for_: Annotated[str, typer.Option("--for", help="The door DID the grant must name.")],
        now: NowOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """Verify contact grants: typ, integers, the issuer is --for, signature, expiry."""
        import time

        from muretai_cli.artifacts.grant import check_grant
        from muretai_cli.errors import MuretaiError
        from muretai_cli.seam import parse_document

        clock = int(time.time()) if now is None else now
        results: list[dict[str, Any]] = []
        for label, raw in iter_documents(files):
            if isinstance(raw, MuretaiError):
                results.append(error_result(label, raw))
                continue
            try:
                grant = check_grant(parse_document(raw), for_did=for_, now=clock)
            except MuretaiError as exc:
                results.append(error_result(label, exc))
                continue
            results.append(result_of(label, [], 0, **{k: grant.get(k) for k in (
                "id", "did", "uses", "iat", "exp", "purpose") if k in grant}))
        raise typer.Exit(render_batch(results, json_out, _grant_summary))

    @app.command("org")
    @handles_errors
    def verify_org(
        files: FilesArg,
        agent: Annotated[str, typer.Option("--agent", help="The agent DID the membership "
                                           "must name.")],
        now: NowOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """Verify org memberships: typ, the member is --agent, the org's signature, expiry."""
        import time

        from muretai_cli.artifacts.org import check_membership
        from muretai_cli.errors import MuretaiError
        from muretai_cli.home import TrustList
        from muretai_cli.seam import parse_document

        clock = int(time.time()) if now is None else now
        trust = TrustList()
        results: list[dict[str, Any]] = []
        for label, raw in iter_documents(files):
            if isinstance(raw, MuretaiError):
                results.append(error_result(label, raw))
                continue
            try:
                doc = check_membership(parse_document(raw), agent_did=agent, now=clock)
            except MuretaiError as exc:
                results.append(error_result(label, exc))
                continue
            trusted = trust.get(doc["orgDid"])
            results.append(result_of(
                label, [], 0, orgDid=doc["orgDid"], agentDid=doc["agentDid"],
                orgName=doc["orgName"], role=doc.get("role"), trusted=trusted is not None,
                trustedName=trusted.name if trusted else None))
        raise typer.Exit(render_batch(results, json_out, _org_summary))
