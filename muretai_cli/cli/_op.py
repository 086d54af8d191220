"""``muretai op --as NAME ...``: everything done as one of your identities."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from muretai_cli.cli import _opdoor, _opvisit
from muretai_cli.cli._db import DbOpt
from muretai_cli.cli._out import KeysOpt

if TYPE_CHECKING:
    from muretai_cli.home import Identity

app = typer.Typer(no_args_is_help=True,
                  help="Act as one of your identities: contacts, DMs, inbox, requests.")


@app.callback()
def _op(
    ctx: typer.Context,
    as_: Annotated[str, typer.Option("--as", help="The identity to act as (a name in keys/).")],
    keys: KeysOpt = None,
    db: DbOpt = None,
) -> None:
    """Act as one of your identities."""
    ctx.obj = {"as": as_, "keys": keys, "db": db}


def op_identity(ctx: typer.Context) -> Identity:
    """The identity named by ``op --as``, loaded (permissions checked) from the keys folder."""
    from muretai_cli.home import KeyStore, keys_dir

    obj = ctx.find_root().obj if ctx.obj is None else ctx.obj
    keys: Path | None = obj.get("keys")
    return KeyStore(keys_dir(keys)).load(obj["as"])


app.add_typer(_opvisit.contact_app, name="contact")
app.add_typer(_opvisit.handoff_app, name="handoff")
_opdoor.register(app)
