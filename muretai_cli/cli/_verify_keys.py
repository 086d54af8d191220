"""``verify keystate``, ``verify owner-state``, ``verify binding``: the key records, offline.

Each pin comes from the command line, never from the file: ``--root`` names whose KeyState
or OwnerState it must be, ``--device`` the device a binding must be about, ``--pinned`` (or
the pin store) the KeyState the ratchet holds, ``--now`` the check time.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from muretai_cli.cli._batch import NowOpt, verify_batch
from muretai_cli.cli._dids import did_opt
from muretai_cli.cli._formats import FormatOpt
from muretai_cli.cli._input import FilesArg, read_input
from muretai_cli.cli._out import JsonOpt

# Notes from the ratchet that mean "the record you gave is not what is in force".
_REFUSING = {"pin-unusable", "keystate-rollback", "keystate-fork",
             "root-changed", "op-revoked"}


def _keystate_summary(item: dict[str, Any]) -> str:
    pinned = ", pinned" if item.get("pinnedNow") else ""
    return f"{item.get('rootDid')} signs as {item.get('opDid')} (epoch {item.get('epoch')}" \
           f"{pinned})"


def register(app: typer.Typer) -> None:
    """Add the key-record verify commands to the ``verify`` group."""

    @app.command("keystate")
    def verify_keystate(
        files: FilesArg,
        root: Annotated[str, did_opt("--root", "The root DID the KeyState must be for.")],
        pinned: Annotated[str | None, typer.Option(
            "--pinned", help="A KeyState kept from earlier (default: the pin store's).",
            show_default=False)] = None,
        pin: Annotated[bool, typer.Option(
            "--pin", help="Keep the record in the pin store when it is strictly newer.")
        ] = False,
        now: NowOpt = None,
        fmt: FormatOpt = "text",
        json_out: JsonOpt = False,
    ) -> None:
        """Resolve the operational DID a KeyState delegates to, with the anti-rollback ratchet.

        Exit 0 only when the record verifies at --now and is the one in force: not older
        than, a fork of, or burned by the pinned KeyState. The answer is printed either way.
        """
        from muretai_cli.artifacts.keystate import (
            MAX_REVOKED_OPS,
            replaces_pin,
            resolve_op_did,
            verify_keystate,
            verify_pin,
        )
        from muretai_cli.errors import MuretaiError
        from muretai_cli.home import KeyStatePins
        from muretai_cli.seam import parse_document
        from muretai_cli.verdict import Reason, Verdict, warning

        clock = int(time.time()) if now is None else now
        store = KeyStatePins()
        held: object = parse_document(read_input(pinned)) if pinned is not None else store.get(root)
        pin_source = "file" if pinned is not None else ("store" if held is not None else None)

        def check(doc: object) -> Verdict:
            nonlocal held
            reasons: list[Reason] = []
            ks = None
            try:
                ks = verify_keystate(doc, root_did=root, now=clock)
            except MuretaiError as exc:  # the answer below still names the key in force
                reasons.append(Reason(exc.code, exc.detail))
            res = resolve_op_did(root, doc, held, now=clock)
            reasons += [Reason(n.code, n.detail, "error" if n.code in _REFUSING else "warning")
                        for n in res.notes if n.code != "inline-refused"]
            if ks is not None and not reasons and res.op_did != ks.op_did:
                reasons.append(Reason("not-in-force", "the record verifies but another key "
                                      f"signs for {root}: {res.op_did}"))
            if ks is not None and len(ks.burned) >= MAX_REVOKED_OPS:
                reasons.append(warning("revoked-ops-at-cap", f"revokedOps holds {MAX_REVOKED_OPS}"
                                       ", all it can: a key burned before them may have fallen "
                                       "off, so one missing from it is not proven unburned"))
            errors = [i for i, r in enumerate(reasons) if r.severity == "error"]
            if errors:  # the answer is printed on a refusal too, not only in --json
                first = reasons[errors[0]]
                reasons[errors[0]] = Reason(first.code, f"{first.detail}; in force: "
                                            f"{res.op_did} (from the {res.source})")
            stored = False
            if pin and ks is not None and not any(r.severity == "error" for r in reasons):
                stored = store.offer(root, dict(ks.record), clock, lambda old: replaces_pin(
                    ks, None if old is None else verify_pin(old, root_did=root)))
                if stored:
                    held = dict(ks.record)
            facts = {**res.to_json(), "pinSource": pin_source, "pinnedNow": stored}
            facts.pop("notes")
            return Verdict.of("keystate", reasons, facts)

        verify_batch(files, json_out, check, _keystate_summary, fmt=fmt)

    @app.command("owner-state")
    def verify_owner_state(
        files: FilesArg,
        root: Annotated[str, did_opt("--root", "The owner DID it must be for.")],
        fmt: FormatOpt = "text",
        json_out: JsonOpt = False,
    ) -> None:
        """Verify OwnerState revocation lists: typ, integers, canonical list, the owner's sig.

        A device missing from the list is not proof it was never disowned: the list is capped.
        """
        from muretai_cli.artifacts.ownerstate import MAX_REVOKED_DEVICES, verify_owner_state
        from muretai_cli.verdict import Verdict, warning

        def check(doc: object) -> Verdict:
            state = verify_owner_state(doc, root_did=root)
            notes = [warning("list-at-cap", f"{len(state.revoked)} revocations: the cap; older "
                             "ones may have fallen off")] \
                if len(state.revoked) >= MAX_REVOKED_DEVICES else []
            return Verdict.of("owner-state", notes, {
                "rootDid": state.root_did, "epoch": state.epoch, "ts": state.ts,
                "revoked": list(state.revoked), "cap": MAX_REVOKED_DEVICES})

        verify_batch(files, json_out, check, lambda item: (
            f"{item.get('rootDid')} epoch {item.get('epoch')}: "
            f"{len(item.get('revoked') or [])} device(s) disowned"), fmt=fmt)

    @app.command("binding")
    def verify_binding(
        files: FilesArg,
        device: Annotated[str, did_opt("--device", "The device DID you expect (the binding "
                                       "must be about it).")],
        now: NowOpt = None,
        fmt: FormatOpt = "text",
        json_out: JsonOpt = False,
    ) -> None:
        """Verify device bindings (v2: owner and device both sign; v1: the owner alone)."""
        from muretai_cli.artifacts.binding import verify_binding
        from muretai_cli.verdict import Verdict

        clock = int(time.time()) if now is None else now

        def check(doc: object) -> Verdict:
            got = verify_binding(doc, device_did=device, now=clock)
            return Verdict.of("binding", got.notes, {
                "version": got.version, "rootDid": got.root_did, "deviceDid": got.device_did,
                "ts": got.ts, "validUntil": got.valid_until})

        verify_batch(files, json_out, check, lambda item: (
            f"{item.get('deviceDid')} acts for {item.get('rootDid')} "
            f"(v{item.get('version')})"), fmt=fmt)
