"""``sign keystate``, ``sign owner-state``, ``sign binding``: mint what ``verify`` accepts.

Each mint remembers the last record of its kind per identity (``MintedRecords``), so the
next one follows it: the epoch goes up by one, a replaced op key is burned, revocations
accumulate. An explicit ``--epoch`` that does not advance is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from muretai_cli.cli._acting import AsOpt, KeysOpt, load_identity, own_identity
from muretai_cli.cli._dids import did_option
from muretai_cli.cli._out import note
from muretai_cli.cli._text import safe

EpochOpt = Annotated[int | None, typer.Option(
    "--epoch", min=0, help="The epoch (default: one above the last you signed).",
    show_default=False)]
UntilOpt = Annotated[str | None, typer.Option(
    "--valid-until", help="Epoch second, or a duration from now (30d).", show_default=False)]
NowOpt = Annotated[int | None, typer.Option("--now", help="ts to sign.", show_default=False)]
JsonAccepted = Annotated[bool, typer.Option(
    "--json", help="Accepted for symmetry: the output is already one JSON document.")]


def _next_epoch(last: dict[str, Any] | None, asked: int | None, first: int) -> int:
    from muretai_cli.errors import InputError

    previous = last.get("epoch") if last else None
    if asked is None:
        return previous + 1 if isinstance(previous, int) else first
    if isinstance(previous, int) and asked <= previous:
        raise InputError("bad-epoch", f"--epoch {asked} does not advance past {previous}, the "
                                      "last one you signed; a peer that pinned it would refuse")
    return asked


def register(app: typer.Typer, emit: Callable[[object], None]) -> None:
    """Add the key-record sign commands to the ``sign`` group; ``emit`` prints the artifact."""

    @app.command("keystate")
    def sign_keystate(
        op: Annotated[str, typer.Option("--op", help="The operational identity (a name, or "
                                        "its did:key) the root delegates to.")],
        as_: AsOpt = None,
        epoch: EpochOpt = None,
        valid_until: UntilOpt = None,
        now: NowOpt = None,
        keys: KeysOpt = None,
        json_out: JsonAccepted = False,
    ) -> None:
        """Print a KeyState delegating --as's root to --op (the previous op key is burned)."""
        from muretai_cli.artifacts.keystate import burn_list, mint_keystate
        from muretai_cli.cli._durations import parse_moment
        from muretai_cli.home import MintedRecords

        ident = load_identity(as_, keys)
        root = ident.signing_key()
        op_did = did_option(op, "--op", keys=keys)
        clock = int(time.time()) if now is None else now
        minted = MintedRecords()
        last = minted.last(ident.name, "keystate")
        burned = [d for d in (last or {}).get("revokedOps") or [] if isinstance(d, str)]
        if op_did in burned:
            from muretai_cli.errors import InputError

            raise InputError("op-burned", f"{op_did} is burned by the KeyState you signed last "
                             f"(epoch {(last or {}).get('epoch')}); a peer that pinned it "
                             "refuses that key for good", hint="delegate to a new key")
        if last and isinstance(last.get("opDid"), str) and last["opDid"] != op_did:
            burned.append(last["opDid"])
        burned, warnings = burn_list(burned, op_did)
        record = mint_keystate(
            root, op_did=op_did, epoch=_next_epoch(last, epoch, 1), now=clock,
            not_after=parse_moment(valid_until, now=clock) if valid_until else None,
            revoked_ops=burned)
        for w in warnings:
            note(f"warning: {w.code}: {safe(w.detail)}")
        minted.keep(ident.name, "keystate", record)
        emit(record)

    @app.command("owner-state")
    def sign_owner_state(
        revoke: Annotated[list[str], typer.Option(
            "--revoke", help="A device DID (or a name for one) to disown; repeat the option "
            "for more. Earlier revocations you signed are kept.")],
        as_: AsOpt = None,
        epoch: EpochOpt = None,
        now: NowOpt = None,
        keys: KeysOpt = None,
        json_out: JsonAccepted = False,
    ) -> None:
        """Print an OwnerState disowning --revoke devices; warns as the list nears its cap."""
        from muretai_cli.artifacts.ownerstate import mint_owner_state
        from muretai_cli.home import MintedRecords

        revoke = [did_option(did, "--revoke", keys=keys) for did in revoke]
        ident = load_identity(as_, keys)
        owner = ident.signing_key()
        minted = MintedRecords()
        last = minted.last(ident.name, "owner-state")
        earlier = [d for d in (last or {}).get("revoked") or [] if isinstance(d, str)]
        record, warnings = mint_owner_state(
            owner, epoch=_next_epoch(last, epoch, 0), revoked=[*earlier, *revoke],
            now=int(time.time()) if now is None else now)
        for w in warnings:
            note(f"warning: {w.code}: {safe(w.detail)}")
        minted.keep(ident.name, "owner-state", record)
        emit(record)

    @app.command("binding")
    def sign_binding(
        device: Annotated[str, typer.Option("--device", help="The device identity, one of "
                                            "yours (a name or its DID): it countersigns.")],
        as_: AsOpt = None,
        valid_until: UntilOpt = None,
        now: NowOpt = None,
        keys: KeysOpt = None,
        json_out: JsonAccepted = False,
    ) -> None:
        """Print a v2 device binding: --as signs as owner, --device countersigns."""
        from muretai_cli.artifacts.binding import mint_binding
        from muretai_cli.cli._durations import parse_moment

        clock = int(time.time()) if now is None else now
        owner = load_identity(as_, keys).signing_key()
        countersigner = own_identity(device, keys, option="--device").signing_key()
        emit(mint_binding(owner, countersigner, now=clock,
                          valid_until=parse_moment(valid_until, now=clock) if valid_until
                          else 0))
