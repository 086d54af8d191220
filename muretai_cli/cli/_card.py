"""``muretai card fetch|pins|forget``: fetch and judge Agent Cards; the pins they record."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from muretai_cli.cli._acting import AsOpt, KeysOpt
from muretai_cli.cli._dids import did_option
from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._visitout import (
    DEFAULT_MAX_BYTES,
    MaxBytesOpt,
    NowOpt,
    TimeoutOpt,
    WbaAgentOpt,
    WbaAsOpt,
    WbaOpt,
    client_for,
    make_client,
    now_or_clock,
    print_card,
    progress,
    wba_signer,
)
from muretai_cli.errors import InputError

if TYPE_CHECKING:
    from muretai_cli.visit.card import CardCheck

app = typer.Typer(no_args_is_help=True)


@app.command("fetch")
def fetch(
    url: Annotated[str, typer.Argument(
        help="Base URL (https://host or https://host/path) or the full card URL.")],
    did: Annotated[str | None, typer.Option("--did", help="Refuse a card naming another DID.",
                                            show_default=False)] = None,
    require_signed: Annotated[bool, typer.Option(
        "--require-signed", help="Refuse a card without a signed envelope.")] = False,
    timeout: TimeoutOpt = "30",
    max_bytes: MaxBytesOpt = DEFAULT_MAX_BYTES,
    now: NowOpt = None,
    save: Annotated[Path | None, typer.Option(
        "--save", metavar="FILE", show_default=False,
        help="Write the verified signed envelope here, for later `handoff check --offline "
             "--card FILE`.")] = None,
    wba: WbaOpt = False,
    wba_agent: WbaAgentOpt = None,
    as_: WbaAsOpt = None,
    keys: KeysOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """GET a card and its signed envelope, judge them, and pin the card's DID (first time).

    Also reports whether the site's did-configuration.json binds the card's DID to its domain:
    bound, not-bound or not-published.
    """
    from muretai_cli.home import PinStore, TrustList
    from muretai_cli.visit.card import fetch_card

    if did is not None:
        did = did_option(did, "--did")
    from muretai_cli.site import domain_linkage

    signer = wba_signer(wba, as_, keys, wba_agent)
    linkage = None
    with make_client(timeout, max_bytes, signer=signer) as client, \
            progress(f"fetching {url}"):
        check = fetch_card(url, client=client, now=now_or_clock(now), expected_did=did,
                           require_signed=require_signed, pins=PinStore(), trust=TrustList())
        if check.did is not None:
            linkage = domain_linkage(check.base, check.did, client=client,
                                     now=now_or_clock(now))
    saved = _save(check, save) if save is not None and check.ok else None
    if json_out:
        emit_json({**check.to_json(), **({"saved": str(saved)} if saved else {}),
                   "domainLinkage": linkage})
    else:
        print_card(check)
        if linkage is not None:
            say(f"domain linkage: {linkage['state']} ({linkage['url']})")
        if saved is not None:
            note(f"saved the signed envelope to {saved}")
    if not check.ok:
        raise typer.Exit(1)


def _save(check: CardCheck, path: Path) -> Path:
    """The verified envelope, byte for byte as canonical JSON (what was signed stays intact)."""
    from muretai_cli.errors import Refused
    from muretai_cli.home import atomic_write
    from muretai_cli.seam import canonical_bytes

    if check.envelope is None:
        raise Refused("nothing-to-save", f"{check.base.text} has no verified signed envelope "
                                         "to save", hint="only a signed card can be judged "
                                                         "offline later")
    atomic_write(path, canonical_bytes(check.envelope) + b"\n", mode=0o644, overwrite=True)
    return path


@app.command("pins")
def pins(json_out: JsonOpt = False) -> None:
    """List pinned cards: each base URL with the DID first seen there."""
    from muretai_cli.home import PinStore

    store = PinStore()
    rows = store.all()
    if json_out:
        emit_json({"ok": True, "pins": [p.to_json() for p in rows]})
        return
    for pin in rows:
        say(f"{pin.base}\t{pin.did}")
    if not rows:
        note(f"no pins in {store.path}")


@app.command("forget")
def forget(
    origin: Annotated[str, typer.Argument(help="The pinned base URL (or its card URL).")],
    json_out: JsonOpt = False,
) -> None:
    """Forget a pin, accepting whatever DID that base URL's card names next."""
    from muretai_cli.errors import Refused
    from muretai_cli.home import PinStore
    from muretai_cli.urls import base_from_any

    base = base_from_any(origin, require_https=False)
    pin = PinStore().forget(base.text)
    if pin is None:
        raise Refused("no-pin", f"nothing is pinned for {base.text}",
                      hint="list pins with `muretai card pins`")
    if json_out:
        emit_json({"ok": True, "forgotten": pin.to_json()})
    else:
        say(f"forgot {pin.base} ({pin.did})")


@app.command("publish")
def publish(
    as_: AsOpt = None,
    url: Annotated[str, typer.Option("--url", help="Its door's URL, if it serves one "
                                     "(empty: relay only).")] = "",
    name: Annotated[str | None, typer.Option("--name", help="The name on the card (default: "
                                             "the identity's).", show_default=False)] = None,
    keys: KeysOpt = None,
    timeout: TimeoutOpt = "30",
    json_out: JsonOpt = False,
) -> None:
    """Sign {did, name, url, relay, enc_pub} and post it to the identity's relay."""
    import time

    from muretai_cli.cli._acting import load_identity
    from muretai_cli.cli._durations import parse_seconds
    from muretai_cli.cli._vouch import relay_card_revocations
    from muretai_cli.home import Profiles
    from muretai_cli.urls import parse_base_url
    from muretai_cli.visit.relay import RelayClient, relay_card

    ident = load_identity(as_, keys)
    relay = Profiles().relay_of(ident.did)
    if relay is None:
        raise InputError("no-relay", f"{ident.name} has no relay",
                         hint=f"set one with `muretai id relay {ident.name} URL`")
    door = parse_base_url(url).text if url else ""
    key = ident.signing_key()
    card = relay_card(key, name=name or ident.name, relay=relay, door=door,
                      revocations=relay_card_revocations(ident, key, int(time.time())))
    client = RelayClient(relay, client_for, timeout=parse_seconds(timeout))
    with progress(f"publishing to {relay}"):
        envelope = client.publish_signed(key, card, int(time.time()))
    if json_out:
        emit_json({"ok": True, "did": key.did, "relay": relay, "card": card,
                   "ts": envelope["ts"]})
    else:
        say(f"published {key.did} at {relay}")
