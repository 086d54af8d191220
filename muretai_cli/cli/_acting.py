"""Who a command acts as: ``--as NAME|DID`` (else ``$MURETAI_AS``), its keys folder
(``--keys``) and its store (``--db``); for the groups acting as an identity (``op``,
``contact``) those may come anywhere on the line (``_tree.AsGroup``) and are kept by
``acting_as`` for the subcommands (``op_identity``, ``op_db``).

One module, imported by every command that acts as someone; it imports no command module.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from muretai_cli.cli._text import safe
from muretai_cli.errors import InputError

if TYPE_CHECKING:
    from muretai_cli.home import Identity


AS_ENV = "MURETAI_AS"


AsOpt = Annotated[str | None, typer.Option(
    "--as", metavar="NAME|DID", show_default=False,
    help=f"The identity to act as: a name in keys/, or its DID; default ${AS_ENV}.")]


KeysOpt = Annotated[Path | None, typer.Option(
    "--keys", envvar="MURETAI_KEYS", help="Keys folder (default $MURETAI_HOME/keys).",
    show_default=False)]


def chosen_identity(as_: str | None) -> str | None:
    """The identity named by ``--as``, else by ``$MURETAI_AS``, else None."""
    return as_ or os.environ.get(AS_ENV) or None


def identity_name(as_: str | None) -> str:
    """The identity named by ``--as``, else by ``$MURETAI_AS``; a usage error if neither."""
    name = chosen_identity(as_)
    if not name:
        raise InputError("no-identity", f"which identity? give --as NAME or set {AS_ENV}=NAME",
                         hint="`muretai id list` shows your identities")
    return name


def load_identity(as_: str | None, keys: Path | None) -> Identity:
    """The identity ``--as`` (or ``$MURETAI_AS``) names, loaded with its permissions checked."""
    return own_identity(identity_name(as_), keys)


def own_identity(value: str, keys: Path | None, *, option: str = "--as") -> Identity:
    """One of your identities, named or given by its DID, loaded with its permissions
    checked; a DID none of them has is a usage error naming ``option``."""
    from muretai_cli.home import KeyStore, keys_dir

    store = KeyStore(keys_dir(keys))
    if value.startswith("did:"):
        name = store.name_of(value)
        if name is None:
            raise InputError("no-such-identity", f"{option} {safe(value, limit=120)}: none of "
                                                 f"your identities (in {store.root}) has this DID",
                             hint="`muretai id list` shows your identities")
        value = name
    return store.load(value)


DbOpt = Annotated[str | None, typer.Option(
    "--db", envvar="MURETAI_DB", show_envvar=True,
    help="The store's database: postgresql://user@host/dbname, or a SQLite file "
         "(default: the identity's file under $MURETAI_HOME/doors).")]


def acting_as(ctx: typer.Context, as_: AsOpt = None, keys: KeysOpt = None,
              db: DbOpt = None) -> None:
    """Act as one of your identities."""
    obj = ctx.ensure_object(dict)
    for name, param, value in (("as", "as_", as_), ("keys", "keys", keys), ("db", "db", db)):
        typed = getattr(ctx.get_parameter_source(param), "name", "") == "COMMANDLINE"
        if value is not None and (typed or name not in obj):  # what was typed wins over env
            obj[name] = value


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
