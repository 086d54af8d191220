"""A read-only self-check of a muretai home: each finding says ok or the command that fixes it.

Nothing here writes: folders and files are only stat'ed and read, a door database is opened
only when it already exists, and a peer is only asked for its card (its HTTP ``Date`` header
is the clock to compare against). The CLI renders the findings (``muretai doctor``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import InputError, MuretaiError

if TYPE_CHECKING:
    from muretai_cli.home import Identity, KeyStore
    from muretai_cli.net import SafeClient
    from muretai_cli.urls import BaseUrl

Status = Literal["ok", "problem", "skipped"]
STATUSES: tuple[Status, ...] = ("ok", "problem", "skipped")


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of the check-up. A problem names the command that fixes it."""

    check: str
    status: Status
    message: str
    fix: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise InputError("bad-status", f"a finding is ok, problem or skipped, not "
                                           f"{self.status!r}")
        if self.status == "problem" and not self.fix:
            raise InputError("no-fix", f"the problem {self.check!r} must say what fixes it")

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "message": self.message,
                "fix": self.fix}


def check_home(home: Path, keys: Path) -> list[Finding]:
    """The home and keys folders exist and are private (mode 700)."""
    from muretai_cli.home import open_to_others

    found: list[Finding] = []
    for check, folder in (("home", home), ("keys folder", keys)):
        if not folder.is_dir():
            found.append(Finding(check, "problem", f"{folder} does not exist yet",
                                 "muretai id new NAME"))
            continue
        loose = open_to_others(folder)
        if loose is None:
            found.append(Finding(check, "ok", f"{folder} (private)"))
        else:
            found.append(Finding(check, "problem", f"{folder} is open to group or others "
                                                   f"(mode {loose:03o})", f"chmod 700 {folder}"))
    return found


def check_identities(store: KeyStore, names: Iterable[str]) -> tuple[list[Finding],
                                                                      list[Identity]]:
    """Each identity's key file: private (600), readable, its stored DID matching its seed."""
    found: list[Finding] = []
    loaded: list[Identity] = []
    for name in names:
        path = store.path_of(name)
        try:
            ident = store.load(name)
        except MuretaiError as exc:
            fix = exc.hint or f"muretai id show {name}"
            if exc.code == "key-file-permissions":
                fix = f"chmod 600 {path}"
            elif exc.code == "no-such-identity":
                fix = f"muretai id new {name}"
            found.append(Finding(f"identity {name}", "problem", f"{exc.code}: {exc.detail}",
                                 fix))
            continue
        loaded.append(ident)
        found.append(Finding(f"identity {name}", "ok", f"{ident.did} ({path}, private)"))
    return found, loaded


def check_door_store(ident: Identity, target: str | None, *, fix: str) -> Finding:
    """The identity's door store, if it has one: reachable, at this program's schema."""
    from muretai_cli.db import is_postgres_url, open_database, require
    from muretai_cli.inbox.store import db_path, door_namespace, door_schema

    check = f"door store {ident.name}"
    where = target or str(db_path(ident.did))
    if not is_postgres_url(where) and not Path(where).exists():
        return Finding(check, "skipped", f"none yet at {where} (made by the first "
                                         f"`muretai serve --as {ident.name}`)")
    try:
        database = open_database(where, namespace=door_namespace(ident.did))
    except MuretaiError as exc:
        return Finding(check, "problem", f"{exc.code}: {exc.detail}",
                       exc.hint or fix.format(verb="status"))
    try:
        require(database, door_schema(), fix=fix)
        described = database.describe()
    except MuretaiError as exc:
        verb = {"no-schema": "init", "old-schema": "upgrade"}.get(exc.code)
        return Finding(check, "problem", f"{exc.code}: {exc.detail}",
                       fix.format(verb=verb) if verb else exc.hint or fix.format(verb="status"))
    finally:
        database.close()
    return Finding(check, "ok", f"{described}, schema version {door_schema().latest}")


def check_pins() -> Finding:
    """The pins file reads (a corrupt one would stop every card fetch)."""
    from muretai_cli.home import PinStore

    store = PinStore()
    try:
        pins = store.all()
    except MuretaiError as exc:
        return Finding("pins", "problem", f"{exc.code}: {exc.detail}",
                       exc.hint or f"mv {store.path} {store.path}.bad")
    return Finding("pins", "ok", f"{len(pins)} pinned card(s) in {store.path}")


def clock_skew(result_headers: Any, local: float) -> float | None:
    """Seconds our clock is ahead of the peer's ``Date`` header (None: no usable header)."""
    value = result_headers.get("date") if result_headers is not None else None
    if not value:
        return None
    try:
        theirs = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return local - theirs


def check_clock(client: SafeClient, peer: BaseUrl, *, local: float, window: int) -> Finding:
    """Our clock against a peer's (its HTTP Date): signed messages allow ±``window`` s."""
    url = peer.join("/.well-known/agent-card.json")
    try:
        result = client.get(url)
    except MuretaiError as exc:
        return Finding("clock", "problem", f"cannot ask {peer.text} the time: {exc.code}: "
                                           f"{exc.detail}", exc.hint or "check --peer URL")
    skew = clock_skew(result.headers, local)
    if skew is None:
        return Finding("clock", "skipped", f"{peer.text} sent no usable Date header")
    side = "ahead of" if skew > 0 else "behind"
    said = f"{abs(skew):.0f} s {side} {peer.text}"
    if abs(skew) > window / 2:
        return Finding("clock", "problem", f"this clock is {said}; signed messages are "
                                           f"refused beyond ±{window} s",
                       "sync the clock with NTP (e.g. `sudo timedatectl set-ntp true`)")
    return Finding("clock", "ok", f"{said} (within ±{window} s)")


def check_relay(ident: Identity, relay: str | None, *, client_for: Any, now: int,
                timeout: float) -> Finding:
    """Where the identity can be reached by relay, and its card published there, current:
    signed by it, naming this relay and its encryption key."""
    from muretai_cli.visit.relay import RelayClient

    check = f"relay {ident.name}"
    if relay is None:
        return Finding(check, "skipped", "no relay: reachable only at a door it serves "
                                         f"(`muretai id relay {ident.name} URL` adds one)")
    publish = f"muretai card publish --as {ident.name}"
    try:
        published = RelayClient(relay, client_for, timeout=timeout).card(ident.did, now=now)
    except MuretaiError as exc:
        if exc.code == "no-card":
            return Finding(check, "problem", f"{relay} holds no card for {ident.did}", publish)
        return Finding(check, "problem", f"{relay}: {exc.code}: {exc.detail}",
                       exc.hint or f"check the relay, or set another: "
                                   f"`muretai id relay {ident.name} URL`")
    stale = [field for field, want in (("relay", relay),
                                       ("enc_pub", ident.signing_key().enc_pub))
             if published.card.get(field) != want]
    if stale:
        return Finding(check, "problem", f"the card at {relay} is out of date ({', '.join(stale)}"
                                         " differ)", publish)
    return Finding(check, "ok", f"card published at {relay} (signed {now - published.ts} s ago)")
