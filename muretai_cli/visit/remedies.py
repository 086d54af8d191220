"""What a visitor can do about a door's refusal: the door names its rule (``data.reason``)
and never a diagnosis (a stranger gets a verdict, not advice); the remedy is ours to say.

``door_refusal(...)`` is the one place a door's JSON-RPC error becomes the visitor's error:
its code, its message and its reason in the text, and the remedy as the hint, so a person at
a shell reads the same reason a script reads under ``--json``. A relay names its refusal as
the error's code itself (``{error, message}``, docs/relay.md); ``relay_remedy`` is its hint.
"""

from __future__ import annotations

from typing import Any

from muretai_cli.errors import PeerRefused

__all__ = ["RELAY_REMEDIES", "REMEDIES", "door_refusal", "relay_remedy", "remedy_for"]

_NEW_INVITE = "ask the inviter for a new invite (they run `muretai invite create`)"
_NEW_GRANT = "ask the door's owner for a new contact grant (`muretai op contact issue`)"
_CLOCK = "check this machine's clock (the door judges the message's ts against its own)"

# The door's rule names (docs/door.md's ladder, docs/invites.md's claim table) -> a remedy.
REMEDIES: dict[str, str] = {
    "invite-used-up": f"the invite has no uses left: {_NEW_INVITE}",
    "expired-invite": f"the invite has expired: {_NEW_INVITE}",
    "revoked-invite": f"the inviter revoked the invite: {_NEW_INVITE}",
    "unknown-nonce": "this door issued no such invite: check you used the invite text the "
                     "inviter sent, and that it names this door",
    "claim-fields-altered": "the claim does not match the invite: use the invite text as "
                            "the inviter sent it",
    "malformed-claim": "the door could not read the claim: check the invite text is whole",
    "unknown-grant": f"the door does not know this grant: {_NEW_GRANT}",
    "grant-no-longer-valid": f"the grant is used up, expired or revoked: {_NEW_GRANT}",
    "grant-for-other-did": "the grant was issued by another identity than this door's: use "
                           "the grant its owner gave you for this door",
    "malformed-grant": "the door could not read the grant: use the grant file as it was "
                       "given to you",
    "introduction-required": "this door takes first messages only with a grant or an "
                             "introduction: ask its owner for a contact grant",
    "blocked": "the door's owner does not take messages from you",
    "rejected": "the door's owner declined your first message",
    "rate-limited": "too many messages: wait, then send again",
    "replay": "the door has seen this message already: send a new one (a retry of the same "
              "message is answered the same way)",
    "stale": _CLOCK, "from-the-future": _CLOCK,
    "wrong-recipient": "the message was addressed to another DID than this door's: check "
                       "the door's DID (`muretai card fetch URL`)",
    "text-too-large": "the text is over the door's 64 KiB: send it shorter, or in parts",
    "empty-text": "the door takes no empty message: give some text",
    "database-unavailable": "the door cannot reach its storage right now: try again in a "
                            "moment",
}


def remedy_for(reason: str | None) -> str | None:
    """The remedy for a door's rule name, or None for a reason we have no advice for."""
    return REMEDIES.get(reason) if isinstance(reason, str) else None


def _reason_of(data: object) -> str | None:
    reason = data.get("reason") if isinstance(data, dict) else None
    if isinstance(reason, str) and reason.isascii() and 0 < len(reason) <= 64:
        return reason
    return None


def door_refusal(what: str, rpc_error: dict[str, Any], *, hint: str | None = None,
                 data: dict[str, Any] | None = None) -> PeerRefused:
    """The door's JSON-RPC error ``rpc_error`` (answering ``what``) as a ``PeerRefused``:
    code, message and reason in its text; the remedy, then ``hint`` (what the HTTP status
    said: a Retry-After), as its hint."""
    code = rpc_error.get("code")
    message = rpc_error.get("message")
    reason = _reason_of(rpc_error.get("data"))
    detail = f"the door answered {what} with JSON-RPC error {code}: {str(message)[:300]}"
    if reason is not None:
        detail += f" (reason: {reason})"
    facts: dict[str, Any] = {"rpcError": {"code": code, "message": message,
                                          "data": rpc_error.get("data")}}
    if reason is not None:
        facts["reason"] = reason
    facts.update(data or {})
    remedy = "; ".join(h for h in (remedy_for(reason), hint) if h) or None
    return PeerRefused("door-refused", detail, hint=remedy, data=facts)


_CLOCK_LISTEN = ("check this machine's clock: a listen token is signed for the current minute "
                "and this relay's origin")

# The relay's refusal codes (docs/relay.md) -> a remedy.
RELAY_REMEDIES: dict[str, str] = {
    "rate-limited": "the relay counts deposits per minute: wait, then send again",
    "mailbox-full": "the recipient's mailbox at the relay is full until they fetch it "
                    "(`op turn-check`): send again later",
    "too-large": "the sealed message is over the relay's size limit: send a shorter text",
    "bad-token": _CLOCK_LISTEN,
    "epoch-ahead": "this machine's clock runs ahead: set it right, then run turn-check again",
    "stale-card": "the relay holds a card for this DID as new as this one or newer: publish "
                  "again in a second (`muretai card publish`), which signs a newer one",
    "bad-card": "the relay could not verify the card envelope: publish it again "
                "(`muretai card publish --as NAME`)",
    "id-reused": "that deposit id already names other content: send it as a new message",
    "unavailable": "the relay cannot take it right now: try again in a moment",
}


def relay_remedy(code: str, retry_after: object = None) -> str | None:
    """The remedy for a relay's refusal ``code`` (with its Retry-After, when it sent one)."""
    remedy = RELAY_REMEDIES.get(code)
    if isinstance(retry_after, int) and not isinstance(retry_after, bool) and remedy:
        remedy += f" (the relay asks to wait {retry_after} s)"
    return remedy
