"""``muretai db init|upgrade|status``: the store's schema, created and upgraded explicitly.

A door's SQLite file is created and upgraded by the door itself, as it always was; a
PostgreSQL store is created only here, so several processes never race to build it, and a
server on a schema version it does not know refuses to start and names the command below.
"""

from __future__ import annotations

from typing import Annotated

import typer

from muretai_cli.cli._out import JsonOpt, KeysOpt, emit_json, handles_errors, note, say

app = typer.Typer(no_args_is_help=True,
                  help="A store's database (SQLite file or PostgreSQL): init, upgrade, status.")

DbOpt = Annotated[str | None, typer.Option(
    "--db", envvar="MURETAI_DB", show_envvar=True,
    help="The store's database: postgresql://user@host/dbname, or a SQLite file "
         "(default: the identity's file under $MURETAI_HOME/doors).")]
AsOpt = Annotated[str, typer.Option("--as", help="The identity whose door store this is.")]


def fix_command(name: str, db: str | None) -> str:
    """The ``muretai db {verb} …`` line that fixes a store's schema, password hidden."""
    from muretai_cli.db import redact

    where = f" --db {redact(db)}" if db else ""
    return f"muretai db {{verb}}{where} --as {name}"


def _run(verb: str, as_: str, db: str | None, keys: KeysOpt, json_out: bool) -> None:
    from muretai_cli.cli._out import load_identity
    from muretai_cli.db import is_postgres_url, open_database, require, upgrade, version_of
    from muretai_cli.inbox.store import db_path, door_namespace, door_schema

    ident = load_identity(as_, keys)
    schema = door_schema()
    target = db or str(db_path(ident.did))
    database = open_database(target, namespace=door_namespace(ident.did))
    try:
        if verb == "status":
            found = version_of(database, schema)
            before = after = found
        else:
            before = version_of(database, schema)
            if verb == "init" and 0 < before < schema.latest:
                require(database, schema, fix=fix_command(ident.name, db))
            before, after = upgrade(database, schema)
        where = database.describe()
    finally:
        database.close()
    current = after == schema.latest
    if json_out:
        emit_json({"ok": verb != "status" or current, "store": "door", "did": ident.did,
                   "database": where, "backend": "postgresql" if is_postgres_url(target)
                   else "sqlite", "schemaVersion": after, "expected": schema.latest,
                   "previousVersion": before})
        if verb == "status" and not current:
            raise typer.Exit(1)
        return
    if verb == "status":
        say(f"door store of {ident.name}: schema version {after} (this program: "
            f"{schema.latest}) at {where}")
        if not current:
            verb = "init" if after == 0 else "upgrade"
            note(f"hint: {fix_command(ident.name, db).format(verb=verb)}")
            raise typer.Exit(1)
    elif before == after:
        say(f"door store of {ident.name} already at schema version {after} ({where})")
    else:
        say(f"door store of {ident.name}: schema version {before} -> {after} ({where})")


@app.command("init")
@handles_errors
def init(as_: AsOpt, db: DbOpt = None, keys: KeysOpt = None, json_out: JsonOpt = False) -> None:
    """Create an identity's door store (tables at this program's schema version)."""
    _run("init", as_, db, keys, json_out)


@app.command("upgrade")
@handles_errors
def upgrade_cmd(as_: AsOpt, db: DbOpt = None, keys: KeysOpt = None,
                json_out: JsonOpt = False) -> None:
    """Bring an identity's door store to this program's schema version."""
    _run("upgrade", as_, db, keys, json_out)


@app.command("status")
@handles_errors
def status(as_: AsOpt, db: DbOpt = None, keys: KeysOpt = None,
           json_out: JsonOpt = False) -> None:
    """Show the store's schema version (exit 1 when it is not this program's)."""
    _run("status", as_, db, keys, json_out)
