"""The identity's own standing: ``whoami`` (asking where its card is published) and the
wait on a held request's decision (the gate's promise to the agent).

``whoami`` asks each place the identity can be reached (its relay, its door) for the card
it holds, with a short bounded timeout: ``cardPublished`` is True when one place holds a
current card for this DID, False when every place asked holds none (or there is nowhere),
and ``"unknown"`` when a place could not be asked and none said yes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import InputError, MuretaiError
from muretai_cli.mcp._args import MAX_ID, client_for, required
from muretai_cli.mcp._results import ok

if TYPE_CHECKING:
    from muretai_cli.mcp.server import Tools

__all__ = ["ASK_TIMEOUT", "card_at_door", "card_at_relay", "wait_request", "whoami"]

ASK_TIMEOUT = 3.0  # seconds each place is given to say whether it holds the card
KEEP_YES = 30.0  # seconds a place's "published" is believed before it is asked again
Published = bool | str  # True, False or "unknown"
# (did, place, url) -> when a place last said it holds the card (monotonic seconds): a
# warm whoami asks no one; a "no" or an "unknown" is asked again every time.
_SAID_YES: dict[tuple[str, str, str], float] = {}


def _asked(did: str, place: str, where: str, ask: Callable[[], tuple[Published, str]]
           ) -> tuple[Published, str]:
    key = (did, place, where)
    said = _SAID_YES.get(key)
    if said is not None and time.monotonic() - said < KEEP_YES:
        return True, "published"
    state, detail = ask()
    if state is True:
        _SAID_YES[key] = time.monotonic()
    else:
        _SAID_YES.pop(key, None)
    return state, detail


def card_at_relay(did: str, enc_pub: str, relay: str, now: int) -> tuple[Published, str]:
    """Whether ``relay`` holds a current card of ``did`` naming that relay and ``enc_pub``."""
    from muretai_cli.visit.relay import RelayClient, relay_base

    try:
        asked = RelayClient(relay, client_for, timeout=ASK_TIMEOUT)
        card = asked.card(did, now=now)
    except MuretaiError as exc:
        if exc.code == "no-card":
            return False, "the relay holds no card for this DID"
        if exc.exit_code in (3, 5):
            return "unknown", f"the relay could not be asked ({exc.code})"
        return False, f"the relay's card is refused ({exc.code})"
    named = card.relay
    if named is None or relay_base(named).text != asked.url or card.enc_pub != enc_pub:
        return False, "the relay's card does not name this relay and this key's enc_pub"
    return True, "published"


def card_at_door(did: str, door: str, now: int) -> tuple[Published, str]:
    """Whether the door at ``door`` serves a card that passes the card rules for ``did``."""
    from muretai_cli.visit.card import fetch_card

    try:
        with client_for(ASK_TIMEOUT, 256 * 1024) as client:
            card = fetch_card(door, client=client, now=now, expected_did=did,
                              record_pin=False)
    except MuretaiError as exc:
        if exc.exit_code in (3, 5):
            return "unknown", f"the door could not be asked ({exc.code})"
        return False, f"the door serves no card for this DID ({exc.code})"
    if not card.ok:
        return False, "the door's card is refused: " + ", ".join(
            r.code for r in card.verdict.errors)
    return True, "published"


def whoami(tools: Tools) -> dict[str, Any]:
    """DID, name, door URL and relay, policy, whether the card is published, ``latest``."""
    from muretai_cli.home import Profiles
    from muretai_cli.inbox.consent import policy_of

    ident = tools.ident
    relay = Profiles().relay_of(ident.did)
    store = tools.store()
    try:
        policy = policy_of(store)
        latest = store.latest_seq()
    finally:
        store.close()
    now = int(time.time())
    where: dict[str, dict[str, Any]] = {}
    if relay is not None:
        enc_pub = ident.signing_key().enc_pub
        state, detail = _asked(ident.did, "relay", relay,
                               lambda: card_at_relay(ident.did, enc_pub, relay, now))
        where["relay"] = {"url": relay, "published": state, "detail": detail}
    if tools.door_url is not None:
        door = tools.door_url
        state, detail = _asked(ident.did, "door", door,
                               lambda: card_at_door(ident.did, door, now))
        where["door"] = {"url": door, "published": state, "detail": detail}
    states = [w["published"] for w in where.values()]
    published: Published = (True if True in states else
                            "unknown" if "unknown" in states else False)
    from muretai_cli.home import listener_state

    return ok(name=ident.name, did=ident.did, door=tools.door_url, relay=relay,
              policy=policy, cardPublished=published, card=where, latest=latest,
              agentMayDecide=tools.agent_may_decide, listener=listener_state(ident.did))


def wait_request(tools: Tools, request_id: Any, timeout: Any, *, mixed: bool = False
                 ) -> dict[str, Any]:
    """Wait until the owner has decided on the held request ``request_id`` (at once when
    already decided); a wait whose time is up is ``ok`` with ``timedOut`` and ``held``.
    ``mixed``: a message filter was given too, which a decision has no use for (refused)."""
    from muretai_cli.inbox.held import wait_decision

    rid = required(request_id, "request_id", limit=MAX_ID)
    if mixed:
        raise InputError("bad-argument", "request_id waits for a decision: give it without "
                                         "after, peer, context or reply_to",
                         hint="wait for the decision first, then for messages")
    if timeout is not None and (isinstance(timeout, bool)
                                or not isinstance(timeout, int | float)):
        raise InputError("bad-wait", f"timeout must be a number of seconds, not "
                                     f"{type(timeout).__name__}")
    store = tools.store()
    try:
        found = wait_decision(store, rid, timeout=timeout)
    finally:
        store.close()
    return ok(**found.to_json(), timedOut=found.waited)
