"""``verify grant`` and ``verify org``: batch checks of our signed artifacts."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from muretai_cli.cli._batch import NowOpt, verify_batch
from muretai_cli.cli._dids import did_opt
from muretai_cli.cli._formats import FormatOpt
from muretai_cli.cli._input import FilesArg
from muretai_cli.cli._out import JsonOpt


def _grant_summary(item: dict[str, Any]) -> str:
    return f"grant {item.get('id')} by {item.get('did')}, {item.get('uses')} use(s), " \
           f"exp {item.get('exp')}"


def _org_summary(item: dict[str, Any]) -> str:
    if item.get("trusted"):
        return f"{item.get('agentDid')} member of {item.get('trustedName')!r} (trusted: " \
               f"{item.get('orgDid')} is in your trust list)"
    return f"{item.get('agentDid')} member of {item.get('orgName')!r} (as claimed by " \
           f"{item.get('orgDid')}, not in your trust list)"


def register(app: typer.Typer) -> None:
    """Add the artifact verify commands to the ``verify`` group."""

    @app.command("grant")
    def verify_grant(
        files: FilesArg,
        for_: Annotated[str, did_opt("--for", "The door DID the grant must name.")],
        now: NowOpt = None,
        fmt: FormatOpt = "text",
        json_out: JsonOpt = False,
    ) -> None:
        """Verify contact grants: typ, integers, the issuer is --for, signature, expiry."""
        from muretai_cli.artifacts.grant import check_grant
        from muretai_cli.verdict import Verdict

        clock = int(time.time()) if now is None else now

        def check(doc: object) -> Verdict:
            grant = check_grant(doc, for_did=for_, now=clock)
            facts: dict[str, Any] = {"id": grant.id, "did": grant.did, "uses": grant.uses,
                                     "iat": grant.iat, "exp": grant.exp}
            if grant.purpose is not None:
                facts["purpose"] = grant.purpose
            return Verdict.of("grant", [], facts)

        verify_batch(files, json_out, check, _grant_summary, fmt=fmt)

    @app.command("org")
    def verify_org(
        files: FilesArg,
        agent: Annotated[str, did_opt("--agent", "The agent DID the membership must name.")],
        now: NowOpt = None,
        fmt: FormatOpt = "text",
        json_out: JsonOpt = False,
    ) -> None:
        """Verify org memberships: typ, the member is --agent, the org's signature, expiry."""
        from muretai_cli.artifacts.org import check_membership
        from muretai_cli.home import TrustList
        from muretai_cli.verdict import Verdict

        clock = int(time.time()) if now is None else now
        trust = TrustList()

        def check(doc: object) -> Verdict:
            member = check_membership(doc, agent_did=agent, now=clock)
            trusted = trust.get(member.org_did)
            return Verdict.of("org", [], {
                "orgDid": member.org_did, "agentDid": member.agent_did,
                "orgName": member.org_name, "role": member.role,
                "trusted": trusted is not None,
                "trustedName": trusted.name if trusted else None})

        verify_batch(files, json_out, check, _org_summary, fmt=fmt)
