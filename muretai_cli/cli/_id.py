"""``muretai id``: Ed25519 did:key identities kept as ``<keys>/<name>.key`` (mode 600)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from muretai_cli.cli._acting import KeysOpt
from muretai_cli.cli._input import read_input
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say

if TYPE_CHECKING:
    from muretai_cli.home import KeyStore

app = typer.Typer(help="Create, list, show and remove identities.", no_args_is_help=True)


def _store(keys: Path | None) -> KeyStore:
    from muretai_cli.home import KeyStore, keys_dir

    return KeyStore(keys_dir(keys))


@app.command("new")
def new(
    name: Annotated[str, typer.Argument(help="Identity name: [A-Za-z0-9._-]{1,64}.")],
    seed_file: Annotated[str | None, typer.Option(
        "--seed-file", help="Import a seed (64 hex characters) instead of generating one.")] = None,
    relay: Annotated[str | None, typer.Option(
        "--relay", help="The relay this identity is reached through (https URL).",
        show_default=False)] = None,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Create an identity from 32 random bytes (or an imported seed)."""
    from muretai_cli.home._keys import parse_seed_hex

    relay_url = _relay_url(relay) if relay is not None else None
    seed = None
    if seed_file is not None:
        raw = read_input(seed_file, limit=4096)
        seed = parse_seed_hex(raw.decode("ascii", "replace"), seed_file)
    ident = _store(keys).create(name, seed)
    warnings = []
    if relay_url is not None:
        from muretai_cli.home import Profiles

        Profiles().set_relay(ident.did, relay_url)
        warnings.append(_unpublished(ident.name, relay_url))
    if json_out:
        emit_json({"ok": True, "name": ident.name, "did": ident.did, "path": str(ident.path),
                   "relay": relay_url, "warnings": warnings})
    else:
        say(ident.did)
        typer.echo(f"created {ident.name} at {ident.path}", err=True)
    for w in warnings:
        note(f"warning: {w['code']}: {w['message']}")


def _unpublished(name: str, relay: str) -> dict[str, str]:
    """The warning that an identity names a relay that holds no card of it yet."""
    return {"code": "card-not-published", "message": (
        f"{relay} holds no card for {name} yet, so no peer can find it there or reply to it; "
        f"publish it: `muretai card publish --as {name}`")}


@app.command("list")
def list_(keys: KeysOpt = None, json_out: JsonOpt = False) -> None:
    """List identities in the keys folder."""
    from muretai_cli.errors import InputError, MuretaiError

    store = _store(keys)
    if store.root.exists() and not store.root.is_dir():
        raise InputError("bad-folder", f"{store.root} is not a folder")
    rows, problems = [], []
    for name in store.names():
        try:
            ident = store.load(name)
        except MuretaiError as exc:  # one bad file must not hide the others
            problems.append({"name": name, "error": exc.code, "message": exc.detail,
                             "detail": exc.detail})
            note(f"warning: {name}: {exc.diagnostics()}")
            continue
        rows.append({"name": name, "did": ident.did, "created": ident.created})
    if json_out:
        emit_json({"ok": not problems, "keys": str(store.root), "identities": rows,
                   "problems": problems})
        if problems:
            raise typer.Exit(2)
        return
    for row in rows:
        say(f"{row['name']}\t{row['did']}")
    if not rows:
        typer.echo(f"no identities in {store.root}", err=True)
    if problems:
        raise typer.Exit(2)


@app.command("show")
def show(
    name: str,
    doc: Annotated[bool, typer.Option("--doc", help="Also print the DID document.")] = False,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Show an identity's DID and public key (hex and multibase); never its seed.

    Works on a key file open to group or others (with a warning): this is public data.
    Signing with such a file is still refused.
    """
    from muretai_cli.artifacts.diddoc import describe_did
    from muretai_cli.home import Profiles, open_to_others

    ident = _store(keys).load(name, allow_loose=True)
    info = describe_did(ident.did)
    warnings = []
    loose = open_to_others(ident.path)
    if loose is not None:
        warnings.append({"code": "key-file-permissions", "message": (
            f"{ident.path} is open to group or others (mode {loose:03o}); signing with it is "
            f"refused until `chmod 600 {ident.path}`")})
        note(f"warning: key-file-permissions: {warnings[0]['message']}")
    from muretai_cli.artifacts.diddoc import fingerprint

    # enc_pub derives from the seed: shown only when the key file may be read as a key
    enc_pub = ident.signing_key().enc_pub if loose is None else None
    relay = Profiles().relay_of(ident.did)
    out = {"ok": True, "name": name, "did": ident.did, "created": ident.created,
           "fingerprint": fingerprint(ident.did),
           "publicKeyHex": info["publicKeyHex"], "publicKeyMultibase": info["publicKeyMultibase"],
           "encPub": enc_pub, "relay": relay, "path": str(ident.path), "warnings": warnings}
    if doc:
        out["didDocument"] = info["didDocument"]
    if json_out:
        emit_json(out)
        return
    say(f"name        {name}")
    say(f"did         {ident.did}")
    say(f"fingerprint {out['fingerprint']}  (read it aloud; a peer checks it with "
        f"`muretai op contact verify DID FINGERPRINT`)")
    say(f"public hex  {info['publicKeyHex']}")
    say(f"multibase   {info['publicKeyMultibase']}")
    say(f"enc_pub     {enc_pub or '-'}")
    say(f"relay       {relay or '-'}")
    say(f"file        {ident.path}")
    if doc:
        import json

        say(json.dumps(info["didDocument"], indent=2))


def _confirmed(question: str) -> bool:
    """Ask on stderr, read one line from stdin: stdout stays the result's alone."""
    import sys

    sys.stderr.write(f"{question} [y/N]: ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


@app.command("rm")
def rm(
    name: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Remove an identity (asks first unless --yes). The key cannot be recovered."""
    store = _store(keys)
    ident = store.load(name)
    if not yes and not _confirmed(f"Remove {name} ({ident.did})? Its key cannot be recovered"):
        from muretai_cli.errors import Refused

        raise Refused("not-confirmed", f"nothing removed: {name} was kept",
                      hint="answer y, or pass --yes")
    path = store.remove(name)
    if json_out:
        emit_json({"ok": True, "removed": name, "path": str(path)})
    else:
        typer.echo(f"removed {name} ({path})", err=True)


def _relay_url(url: str) -> str:
    from muretai_cli.visit.relay import relay_base

    return relay_base(url).text


@app.command("relay")
def relay(
    name: str,
    url: Annotated[str, typer.Argument(help="The relay's URL (https, or http on loopback).")],
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Record the relay this identity is reached through (then `card publish --as NAME`)."""
    from muretai_cli.home import Profiles

    relay_url = _relay_url(url)
    ident = _store(keys).load(name)
    Profiles().set_relay(ident.did, relay_url)
    if json_out:
        emit_json({"ok": True, "name": name, "did": ident.did, "relay": relay_url})
    else:
        say(relay_url)
        note(f"{name} is reached through {relay_url}; publish its card with "
             f"`muretai card publish --as {name}`")


PassphraseFileOpt = Annotated[str | None, typer.Option(
    "--passphrase-file", help="Read the passphrase from this file's first line (default: "
                              "ask on the terminal). Never given on the command line.",
    show_default=False)]


def _passphrase(passphrase_file: str | None, *, confirm: bool) -> str:
    """The passphrase: the first line of ``passphrase_file``, else typed at the terminal
    (twice when ``confirm``); never from argv or the environment."""
    import getpass
    import sys

    from muretai_cli.errors import InputError

    if passphrase_file is not None:
        raw = read_input(passphrase_file, limit=4096)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("bad-passphrase-file", f"{passphrase_file}: not UTF-8") from None
        first = text.splitlines()[0] if text else ""
        if not first:
            raise InputError("bad-passphrase-file", f"{passphrase_file}: the first line is "
                                                    "empty")
        return first
    if not sys.stdin.isatty():
        raise InputError("no-passphrase", "no terminal to ask the passphrase on",
                         hint="give --passphrase-file FILE (its first line)")
    typed = getpass.getpass("passphrase: ")
    if confirm and getpass.getpass("again: ") != typed:
        raise InputError("passphrase-mismatch", "the two passphrases differ; nothing written")
    return typed


@app.command("export")
def export(
    name: Annotated[str, typer.Argument(help="The identity to export.")],
    to: Annotated[str, typer.Option("--to", help="The file to write (never overwritten; "
                                    "mode 600).")],
    passphrase_file: PassphraseFileOpt = None,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Write the identity, sealed under a passphrase (scrypt, ChaCha20-Poly1305), to --to.

    The file is the identity: whoever has it and the passphrase can act as it. `id import`
    reads it back.
    """
    from muretai_cli.home import atomic_write
    from muretai_cli.home._backup import seal_identity

    ident = _store(keys).load(name)
    key = ident.signing_key()
    data = seal_identity(ident.name, ident.did, key.seed, ident.created,
                         _passphrase(passphrase_file, confirm=passphrase_file is None))
    atomic_write(Path(to), data, mode=0o600)
    if json_out:
        emit_json({"ok": True, "name": ident.name, "did": ident.did, "path": to})
    else:
        say(to)
        note(f"exported {ident.name} ({ident.did}) to {to}; keep the file and its passphrase "
             "apart")


@app.command("import")
def import_(
    file: Annotated[str, typer.Argument(help="A file `muretai id export` wrote.")],
    as_: Annotated[str | None, typer.Option(
        "--as", help="The name to keep it under (default: the name it was exported with).",
        show_default=False)] = None,
    passphrase_file: PassphraseFileOpt = None,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Read an exported identity into the keys folder; an existing one is never replaced."""
    from muretai_cli.errors import InputError
    from muretai_cli.home._backup import open_identity

    got = open_identity(read_input(file, limit=64 * 1024),
                        _passphrase(passphrase_file, confirm=False), file)
    store = _store(keys)
    name = as_ or got.name
    held = store.name_of(got.did)
    if held is not None:
        raise InputError("exists", f"{got.did} is already here as {held!r}; nothing was "
                                   "imported", hint=f"`muretai id show {held}`")
    ident = store.create(name, got.seed, now=got.created)
    if json_out:
        emit_json({"ok": True, "name": ident.name, "did": ident.did, "path": str(ident.path)})
    else:
        say(ident.did)
        note(f"imported {ident.name} at {ident.path}")
