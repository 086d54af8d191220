"""``verify domain-linkage`` and ``verify request``: offline checks of web-identity proofs."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from muretai_cli.cli._batch import NowOpt, verify_batch
from muretai_cli.cli._dids import did_opt
from muretai_cli.cli._formats import FormatOpt
from muretai_cli.cli._input import FilesArg, read_input
from muretai_cli.cli._out import JsonOpt


def _link_summary(item: dict[str, Any]) -> str:
    return f"{item.get('did')} claims {item.get('origin')} until {item.get('exp')}"


def register(app: typer.Typer) -> None:
    """Add the web-identity verify commands to the ``verify`` group."""

    @app.command("domain-linkage")
    def verify_domain_linkage(
        files: FilesArg,
        domain: Annotated[str, typer.Option("--domain", help="The domain it must name "
                                            "(host[:port]; ports count).")],
        did: Annotated[str, did_opt("--did", "The DID that must have signed it.")],
        now: NowOpt = None,
        fmt: FormatOpt = "text",
        json_out: JsonOpt = False,
    ) -> None:
        """Verify did-configuration.json documents (or one credential as a JSON string)."""
        from muretai_cli.seam import linked_did
        from muretai_cli.seam import verify_domain_linkage as verify_one
        from muretai_cli.verdict import Verdict

        clock = int(time.time()) if now is None else now

        def check(doc: object) -> Verdict:
            link = verify_one(doc, domain=domain, did=did, now=clock) if isinstance(doc, str) \
                else linked_did(doc, domain=domain, did=did, now=clock)
            return Verdict.of("domain-linkage", [], link.to_json())

        verify_batch(files, json_out, check, _link_summary, fmt=fmt)

    @app.command("request")
    def verify_request(
        files: FilesArg,
        authority: Annotated[str, typer.Option("--authority", help="Where the request was "
                                               "received: host[:port], as @authority.")],
        jwks: Annotated[str, typer.Option("--jwks", help="The signer's key directory "
                                          "({\"keys\": [...]}), a file.")],
        now: NowOpt = None,
        fmt: FormatOpt = "text",
        json_out: JsonOpt = False,
    ) -> None:
        """Verify recorded Web Bot Auth requests ({"headers": {...}} or a headers object)."""
        from muretai_cli.errors import Refused
        from muretai_cli.seam import parse_document
        from muretai_cli.seam import verify_request as verify_one
        from muretai_cli.verdict import Verdict

        directory = parse_document(read_input(jwks))
        clock = int(time.time()) if now is None else now

        def check(doc: object) -> Verdict:
            headers = doc.get("headers", doc) if isinstance(doc, dict) else None
            if not isinstance(headers, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
                raise Refused("malformed-request", "a recorded request is an object of string "
                                                   "headers (or {\"headers\": {...}})")
            signer = verify_one(headers, authority=authority, jwks=directory, now=clock)
            return Verdict.of("request", [], {"did": signer, "authority": authority})

        verify_batch(files, json_out, check, lambda item: f"signed by {item.get('did')}", fmt=fmt)
