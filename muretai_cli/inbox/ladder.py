"""The rungs of the ladder, cheapest first; each is a small function that refuses or passes.

Every refusal is an ``RpcError`` carrying a JSON-RPC code, a fixed message and a rule name.
None of them carries text the caller sent (a verdict, not a diagnosis), so an error can be
written back to a stranger as it is.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from muretai_cli.artifacts.message import text_of_parts
from muretai_cli.errors import MuretaiError
from muretai_cli.seam import MAX_SAFE_INT

if TYPE_CHECKING:
    from muretai_cli.artifacts.keystate import MessageSigner

MAX_BODY = 1024 * 1024
MAX_TEXT = 64 * 1024
MAX_ID = 256  # characters of messageId and of contextId (the seam's cap on messageId)
METHODS = ("message/send", "contact/redeem", "onboard/claim")

MESSAGES = {
    -32700: "Parse error",
    -32600: "Invalid Request",
    -32601: "Method not found",
    -32602: "Invalid params",
    -32603: "Internal error",
    -32001: "Signature verification failed",
    -32002: "Replay or stale message",
    -32003: "Message not addressed to me",
    -32004: "Rate limited",
    -32005: "Message text too large",
    -32006: "Cannot verify this signature",
    -32010: "Introduction required",
    -32011: "Contact grant refused",
    -32014: "Awaiting approval",
    -32041: "KeyState refused",
}


class RpcError(Exception):
    """A verdict: JSON-RPC ``code``, a rule name (``reason``), an HTTP status and ``data``."""

    def __init__(self, code: int, reason: str, *, status: int = 200,
                 data: dict[str, Any] | None = None,
                 headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        super().__init__(f"{code} {reason}")
        self.code = code
        self.reason = reason
        self.status = status
        self.data = data
        self.headers = headers

    def error_object(self) -> dict[str, Any]:
        data = self.data if self.data is not None else {"reason": self.reason}
        return {"code": self.code, "message": MESSAGES[self.code], "data": data}


def refused(code: int, exc: MuretaiError) -> RpcError:
    """An ``RpcError`` from a library refusal: its rule name only, never its detail."""
    return RpcError(code, exc.code)


def safe_id(value: object) -> str | int | float | None:
    """The JSON-RPC id to echo: a string, a number within ±(2**53-1), or null (AE-23)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -MAX_SAFE_INT <= value <= MAX_SAFE_INT else None
    if isinstance(value, float):
        return value if math.isfinite(value) and abs(value) <= MAX_SAFE_INT else None
    return None


# -- rung 2: the parse boundary --------------------------------------------------------
# a NUL character in a JSON string is always written as the escape \u0000 (a raw control
# byte does not parse); the escape counts only after an even run of backslashes
_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def parse_request(raw: bytes) -> dict[str, Any]:
    """Bytes to a JSON object through the seam's parse boundary; HTTP 400 otherwise.

    A request holding a NUL character in any string is refused here (``nul-character``), for
    the door and for turn-check alike: PostgreSQL cannot store one in a text, and a refusal
    that depended on the store would differ between the backends (or fail a whole batch, or
    leave a relayed message that could never be taken in)."""
    from muretai_cli.seam import parse_document

    try:
        doc = parse_document(raw)
    except MuretaiError as exc:
        raise RpcError(-32700, exc.code, status=400) from None
    if not isinstance(doc, dict):
        raise RpcError(-32600, "not-an-object", status=400)
    if b"\\u0000" in raw and _NUL_ESCAPE.search(raw):
        raise RpcError(-32600, "nul-character")
    return doc


# -- rung 3: JSON-RPC shape and method ---------------------------------------------------
def rpc_shape(doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(method, params)`` of a JSON-RPC 2.0 call to one of our methods."""
    if doc.get("jsonrpc") != "2.0":
        raise RpcError(-32600, "not-jsonrpc-2.0")
    method = doc.get("method")
    if not isinstance(method, str) or method not in METHODS:
        raise RpcError(-32601, "unknown-method")
    params = doc.get("params")
    if not isinstance(params, dict):
        raise RpcError(-32602, "params-not-an-object")
    return method, params


# -- rung 4: the A2A message shape -------------------------------------------------------
def a2a_message(params: dict[str, Any]) -> dict[str, Any]:
    """The envelope read from ``params.message`` (six fields + ``sig``), shape checked only."""
    msg = params.get("message")
    if not isinstance(msg, dict):
        raise RpcError(-32602, "message-not-an-object")
    if msg.get("kind") != "message":
        raise RpcError(-32600, "not-a2a-message")
    if msg.get("role") != "user":
        raise RpcError(-32600, "role-not-user")
    mid = msg.get("messageId")
    if not isinstance(mid, str) or not 0 < len(mid) <= MAX_ID:
        raise RpcError(-32600, "bad-message-id")
    ctx = msg.get("contextId")
    if ctx is not None and (not isinstance(ctx, str) or len(ctx) > MAX_ID):
        raise RpcError(-32600, "bad-context-id")
    meta = msg.get("metadata")
    if meta is None:
        meta = {}
    elif not isinstance(meta, dict):
        raise RpcError(-32600, "metadata-not-an-object")
    for key in ("from", "to", "sig"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise RpcError(-32600, f"bad-{key}")
    try:
        text = text_of_parts(msg.get("parts"))
    except MuretaiError as exc:
        raise refused(-32600, exc) from None
    if not any(part["text"] for part in msg["parts"]):  # no parts, or only empty ones:
        # nothing was said, nothing to store (two empty parts join to "\n", still nothing)
        raise RpcError(-32600, "empty-text")
    return {"contextId": ctx, "from": meta.get("from"), "messageId": mid, "text": text,
            "timestamp": meta.get("timestamp"), "to": meta.get("to"), "sig": meta.get("sig"),
            "relay": _relay_hint(meta.get("relay")), "replyTo": _id_hint(meta.get("replyTo")),
            "keystate": meta.get("keystate")}


def _relay_hint(value: object) -> str | None:
    """``metadata.relay`` (unsigned): where the sender says it can be reached, canonical, or
    None. Only a place to look: an answer goes there only if the card found there verifies."""
    from muretai_cli.urls import parse_base_url

    if not isinstance(value, str) or len(value) > 2048:
        return None
    try:
        return parse_base_url(value).text
    except MuretaiError:
        return None


def _id_hint(value: object) -> str | None:
    """``metadata.replyTo`` (unsigned): a hint, kept only if the signed binding proves it."""
    return value if isinstance(value, str) and 0 < len(value) <= MAX_ID else None


# -- rung 5: text size, before any cryptography ------------------------------------------
def text_size(text: str) -> None:
    if len(text) > MAX_TEXT // 4 and len(text.encode("utf-8")) > MAX_TEXT:
        raise RpcError(-32005, "text-too-large")


# -- rung 6: the six fields present and typed ----------------------------------------------
def six(env: dict[str, Any], terms: dict[str, Any]) -> dict[str, Any]:
    """The six fields; a keyless walk-in (no from, to or sig) is told the door's terms."""
    from muretai_cli.seam import six_fields

    if env.get("from") is None and env.get("to") is None and env.get("sig") is None:
        raise RpcError(-32001, "no-envelope", data={"reason": "no-envelope",
                                                    "accepts": [terms]})
    if env.get("sig") is None:
        raise RpcError(-32001, "missing-sig")
    try:
        return six_fields(env)
    except MuretaiError as exc:
        raise refused(-32001, exc) from None


# -- rung 7: recipient -------------------------------------------------------------------
def recipient(fields: dict[str, Any], door_did: str) -> None:
    if fields["to"] != door_did:
        raise RpcError(-32003, "wrong-recipient")


# -- rung 8: freshness (a timestamp that names no moment is no fresher) ------------------
def fresh(timestamp: object, now: int) -> None:
    from muretai_cli.seam import check_fresh

    try:
        check_fresh(timestamp, now)
    except MuretaiError as exc:
        raise refused(-32002, exc) from None


def seconds(timestamp: object) -> int:
    """The epoch second a received timestamp names, or -32002 ``timestamp-not-a-number``."""
    from muretai_cli.seam import timestamp_seconds

    try:
        return timestamp_seconds(timestamp)
    except MuretaiError as exc:
        raise refused(-32002, exc) from None


# -- rung 9 is the replay lookup (the store); rung 10: the signature --------------------
def op_key(fields: dict[str, Any], inline: object, pinned_text: str | None, now: int
           ) -> MessageSigner:
    """Which key must have signed: the root ``from`` names, or the op key an attached
    KeyState (``metadata.keystate``) delegates to, judged against the caller's pin (its
    stored canonical text); a record that does not verify, rolls the pin back, forks it or
    names a burned op key is -32041 with its own reason."""
    import json

    from muretai_cli.artifacts.keystate import message_signer
    from muretai_cli.seam import canonical_bytes

    pinned: object = None
    if pinned_text is not None:
        try:  # the pinned record again, byte for byte: one record, verified once
            same = canonical_bytes(inline).decode("utf-8") == pinned_text
        except MuretaiError:
            same = False
        pinned = inline if same else json.loads(pinned_text)
    try:
        return message_signer(fields["from"], inline, pinned, now=now)
    except MuretaiError as exc:
        raise refused(-32041, exc) from None


def signature(fields: dict[str, Any], sig: object, *, signer: str | None = None) -> None:
    """The signature over the six fields as received (-32001) under ``from`` (or ``signer``,
    the op key ``op_key`` chose), or -32006 ``cannot-verify`` when they hold a number
    hazard this verifier cannot reproduce the signer's bytes of. Verified, the timestamp
    is kept as the integer second it names: nothing after this rung stores or answers
    with a float."""
    from muretai_cli.seam import check_signed_fields

    try:
        check_signed_fields(fields, sig, signer=signer)
    except MuretaiError as exc:
        raise refused(-32006 if exc.code == "cannot-verify" else -32001, exc) from None
    fields["timestamp"] = seconds(fields["timestamp"])
