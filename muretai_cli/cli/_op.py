"""``muretai op [--as NAME] ...``: everything done as one of your identities.

``--as NAME`` may come anywhere on the line (``op contact dm DID hi --as me``), and
``$MURETAI_AS`` names a default. Help needs neither.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from muretai_cli.cli import _door, _opconv, _opdoor, _opvisit
from muretai_cli.cli._db import DbOpt
from muretai_cli.cli._out import AsOpt, KeysOpt, load_identity
from muretai_cli.cli._tree import AsGroup

if TYPE_CHECKING:
    from muretai_cli.home import Identity

app = typer.Typer(cls=AsGroup, no_args_is_help=True,
                  help="Act as one of your identities (--as NAME, or $MURETAI_AS): contacts "
                       "and grants, DMs, inbox, held requests, senders, following handoffs.")


def acting_as(ctx: typer.Context, as_: AsOpt = None, keys: KeysOpt = None,
              db: DbOpt = None) -> None:
    """Act as one of your identities."""
    obj = ctx.ensure_object(dict)
    for name, param, value in (("as", "as_", as_), ("keys", "keys", keys), ("db", "db", db)):
        typed = getattr(ctx.get_parameter_source(param), "name", "") == "COMMANDLINE"
        if value is not None and (typed or name not in obj):  # what was typed wins over env
            obj[name] = value


app.callback()(acting_as)


def op_identity(ctx: typer.Context) -> Identity:
    """The identity named by ``--as`` (anywhere on an ``op``/``contact`` line) or
    ``$MURETAI_AS``, loaded (permissions checked) from the keys folder."""
    obj = ctx.find_object(dict) or {}
    keys: Path | None = obj.get("keys")
    return load_identity(obj.get("as"), keys)


def op_db(ctx: typer.Context) -> str | None:
    """The store ``--db`` (or ``$MURETAI_DB``) names on an ``op``/``contact`` line, if any."""
    obj = ctx.find_object(dict) or {}
    db: str | None = obj.get("db")
    return db


# One `contact` group: grants you issue (issue, grants, revoke) and doors you write to (dm,
# list). It lives under `op`; the top-level `muretai contact ...` is its hidden alias.
contact_app = _opvisit.contact_app
contact_app.callback()(acting_as)
_door.register_contact(contact_app)
app.add_typer(contact_app, name="contact")
app.command("dm")(_opvisit.dm)
app.add_typer(_opvisit.handoff_app, name="handoff")
_opdoor.register(app)
_opconv.register(app)
