"""``muretai sign``: produce what the verify commands accept (e.g. for static cards)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from muretai_cli.cli import _intro, _sign_keys
from muretai_cli.cli._acting import AsOpt, KeysOpt, load_identity
from muretai_cli.cli._dids import did_option
from muretai_cli.cli._input import read_input

if TYPE_CHECKING:
    from muretai_cli.seam import SigningKey

app = typer.Typer(help="Sign messages and cards with one of your identities.",
                  no_args_is_help=True)

# Output is the artifact itself, with or without --json, so it pipes into `verify`.
JsonAccepted = Annotated[bool, typer.Option(
    "--json", help="Accepted for symmetry: the output is already one JSON document.")]


def _load(name: str | None, keys: Path | None) -> SigningKey:
    return load_identity(name, keys).signing_key()


def _print(doc: object) -> None:
    sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")


@app.command("message")
def message(
    text: Annotated[str, typer.Argument(help="The text, or - to read it from stdin.")],
    to: Annotated[str, typer.Option("--to", help="The recipient's DID.")],
    as_: AsOpt = None,
    context_id: Annotated[str | None, typer.Option("--context-id")] = None,
    now: Annotated[int | None, typer.Option("--now", help="Timestamp to sign.")] = None,
    keys: KeysOpt = None,
    json_out: JsonAccepted = False,
) -> None:
    """Print a complete signed A2A message/send request on stdout."""
    from muretai_cli.artifacts.message import build_message_send, signed_message
    from muretai_cli.errors import InputError

    to = did_option(to, "--to", keys=keys)
    if text == "-":
        try:
            text = read_input("-", limit=65536).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("invalid-utf8", "stdin is not UTF-8 text") from None
    key = load_identity(as_, keys).message_key()  # the op key for the root, once rotated
    when = int(time.time()) if now is None else now
    _print(build_message_send(signed_message(key, to=to, text=text, now=when,
                                             context_id=context_id)))


@app.command("card")
def card(
    card_file: Annotated[str, typer.Argument(help="The card JSON (a file, or -).")],
    as_: AsOpt = None,
    now: Annotated[int | None, typer.Option("--now", help="ts to sign.")] = None,
    keys: KeysOpt = None,
    json_out: JsonAccepted = False,
) -> None:
    """Print the signed envelope {v, typ, card, ts, sig} of a card on stdout.

    A card without a did gets the signer's; a card naming another DID is refused.
    """
    from muretai_cli.errors import InputError
    from muretai_cli.seam import parse_document, sign_card_envelope

    body = parse_document(read_input(card_file))
    if not isinstance(body, dict):
        raise InputError("not-a-card", "a card is a JSON object")
    key = _load(as_, keys)
    when = int(time.time()) if now is None else now
    _print(sign_card_envelope(key, body, when))


_sign_keys.register(app, _print)
_intro.register_sign(app, _print)
