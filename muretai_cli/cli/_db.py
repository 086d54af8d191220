"""``muretai db init|upgrade|status``: the store's schema, created and upgraded explicitly.

A door's SQLite file is created and upgraded by the door itself, as it always was; a
PostgreSQL store is created only here, so several processes never race to build it, and a
server on a schema version it does not know refuses to start and names the command below.
"""

from __future__ import annotations

from typing import Annotated

import typer

from muretai_cli.cli._acting import DbOpt, KeysOpt
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say

app = typer.Typer(no_args_is_help=True,
                  help="A store's database (SQLite file or PostgreSQL): init, upgrade, status.")

AsOpt = Annotated[str | None, typer.Option(
    "--as", metavar="NAME|DID", show_default=False,
    help="The identity whose door store this is (default $MURETAI_AS).")]
RelayOpt = Annotated[bool, typer.Option("--relay", help="The relay's store instead of a door's "
                                                        "(--db as for `relay serve`).")]


def fix_command(name: str, db: str | None) -> str:
    """The ``muretai db {verb} …`` line that fixes a store's schema, password hidden."""
    from muretai_cli.db import redact

    where = f" --db {redact(db)}" if db else ""
    return f"muretai db {{verb}}{where} --as {name}"


def _run(verb: str, as_: str | None, relay: bool, db: str | None, keys: KeysOpt,
         json_out: bool) -> None:
    from muretai_cli.cli._acting import chosen_identity, load_identity
    from muretai_cli.db import (
        Database,
        Schema,
        is_postgres_url,
        open_database,
        redact,
        require,
        upgrade,
        version_of,
    )
    from muretai_cli.errors import InputError

    schema: Schema
    database: Database
    if not relay:
        as_ = chosen_identity(as_)
    if relay == (as_ is not None):
        raise InputError("usage", "name one store: --as NAME (a door; or $MURETAI_AS) or "
                                  "--relay")
    if relay or as_ is None:
        from muretai_cli.relay import store as relay_store

        schema = relay_store.SCHEMA
        target = db or str(relay_store.default_db_path())
        database = open_database(target, namespace=relay_store.NAMESPACE)
        label, did = "relay store", None
        fix = "muretai db {verb}" + (f" --db {redact(db)}" if db else "") + " --relay"
    else:
        from muretai_cli.inbox.store import db_path, door_namespace, door_schema

        ident = load_identity(as_, keys)
        schema = door_schema()
        target = db or str(db_path(ident.did))
        database = open_database(target, namespace=door_namespace(ident.did))
        label, did = f"door store of {ident.name}", ident.did
        fix = fix_command(ident.name, db)
    try:
        before = version_of(database, schema)
        after = before
        if verb != "status":
            if verb == "init" and 0 < before < schema.latest:
                require(database, schema, fix=fix)
            before, after = upgrade(database, schema)
        where = database.describe()
    finally:
        database.close()
    current = after == schema.latest
    if json_out:
        emit_json({"ok": verb != "status" or current, "store": "relay" if relay else "door",
                   "did": did, "database": where,
                   "backend": "postgresql" if is_postgres_url(target) else "sqlite",
                   "schemaVersion": after, "expected": schema.latest,
                   "previousVersion": before})
        if verb == "status" and not current:
            raise typer.Exit(1)
        return
    if verb == "status":
        say(f"{label}: schema version {after} (this program: {schema.latest}) at {where}")
        if not current:
            note("hint: " + fix.format(verb="init" if after == 0 else "upgrade"))
            raise typer.Exit(1)
    elif before == after:
        say(f"{label} already at schema version {after} ({where})")
    else:
        say(f"{label}: schema version {before} -> {after} ({where})")


@app.command("init")
def init(as_: AsOpt = None, relay: RelayOpt = False, db: DbOpt = None, keys: KeysOpt = None,
         json_out: JsonOpt = False) -> None:
    """Create a store (an identity's door, or the relay) at this program's schema version."""
    _run("init", as_, relay, db, keys, json_out)


@app.command("upgrade")
def upgrade_cmd(as_: AsOpt = None, relay: RelayOpt = False, db: DbOpt = None,
                keys: KeysOpt = None, json_out: JsonOpt = False) -> None:
    """Bring a store to this program's schema version."""
    _run("upgrade", as_, relay, db, keys, json_out)


@app.command("status")
def status(as_: AsOpt = None, relay: RelayOpt = False, db: DbOpt = None,
           keys: KeysOpt = None, json_out: JsonOpt = False) -> None:
    """Show a store's schema version (exit 1 when it is not this program's)."""
    _run("status", as_, relay, db, keys, json_out)
