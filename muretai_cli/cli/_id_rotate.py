"""``muretai id rotate NAME``: a new operational key, delegated by the root in a KeyState.

From then on every message NAME sends is signed by the op key, ``from`` still the root DID,
with the KeyState in ``metadata.keystate``; a receiver verifies the record under the root
and the message under the op key (docs/seam.md, "Op keys"). ``--root-file F`` signs with the
root key kept in F, and the identity's own file then keeps no root seed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from muretai_cli.cli._acting import KeysOpt
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say


def register(app: typer.Typer) -> None:
    """Add ``rotate`` to the ``id`` group."""
    app.command("rotate")(rotate)


def rotate(
    name: Annotated[str, typer.Argument(help="The identity whose op key to replace.")],
    root_file: Annotated[str | None, typer.Option(
        "--root-file", help="A key file holding the root key (kept offline); the identity's "
        "own file then keeps only the op key.", show_default=False)] = None,
    valid_until: Annotated[str | None, typer.Option(
        "--valid-until", help="Epoch second, or a duration from now (30d): the delegation's "
        "end.", show_default=False)] = None,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Make a new op key for NAME and sign its KeyState (the previous op key is burned)."""
    from muretai_cli.cli._durations import parse_moment
    from muretai_cli.home import KeyStore, keys_dir
    from muretai_cli.home._keys import _load_signing_key

    store = KeyStore(keys_dir(keys))
    ident = store.load(name)
    root = _load_signing_key(Path(root_file)) if root_file else ident.signing_key()
    now = int(time.time())
    record = store.rotate(ident.name, root, now=now, root_offline=root_file is not None,
                          not_after=parse_moment(valid_until, now=now) if valid_until else None)
    burned = record.get("revokedOps") or []
    if json_out:
        emit_json({"ok": True, "name": ident.name, "did": ident.did, "opDid": record["opDid"],
                   "epoch": record["epoch"], "revokedOps": burned,
                   "rootOffline": root_file is not None, "keystate": record})
        return
    say(str(record["opDid"]))
    note(f"{ident.name} now signs with op key {record['opDid']} (KeyState epoch "
         f"{record['epoch']}); its messages carry the record"
         + ("; the root key stays in " + root_file if root_file else ""))
