"""``muretai domain link``: mint a did-configuration.json for one of your identities."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated

import typer

from muretai_cli.cli._acting import AsOpt, KeysOpt, load_identity
from muretai_cli.cli._out import note

app = typer.Typer(help="Domain linkage: say which domain your DID speaks for.",
                  no_args_is_help=True)


@app.command("link")
def link(
    domain: Annotated[str, typer.Option("--domain", help="The bare domain (host[:port]).")],
    as_: AsOpt = None,
    days: Annotated[int, typer.Option("--days", min=1, max=3650,
                                      help="How long the credential holds.")] = 90,
    now: Annotated[int | None, typer.Option("--now", help="nbf to sign (epoch s).",
                                            show_default=False)] = None,
    keys: KeysOpt = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Accepted for symmetry: the output is already one JSON document.")
    ] = False,
) -> None:
    """Print a did-configuration.json holding a Domain Linkage Credential (compact JWS).

    Serve it at https://DOMAIN/.well-known/did-configuration.json (`muretai serve
    --did-configuration FILE` does), and only for a domain you actually control.
    """
    from muretai_cli.errors import InputError, MuretaiError
    from muretai_cli.seam import did_configuration, sign_domain_linkage

    key = load_identity(as_, keys).signing_key()
    nbf = int(time.time()) if now is None else now
    try:
        token = sign_domain_linkage(key, domain, nbf=nbf, exp=nbf + days * 86400)
    except MuretaiError as exc:
        raise InputError(exc.code, exc.detail, hint="--domain is a bare lowercase host, "
                                                    "e.g. example.com or 127.0.0.1:8443") \
            from None
    sys.stdout.write(json.dumps(did_configuration([token]), ensure_ascii=False) + "\n")
    note(f"{key.did} claims https://{domain} until {days} days from now; publish it at "
         f"https://{domain}/.well-known/did-configuration.json")
