"""The rungs of the ladder, cheapest first; each is a small function that refuses or passes.
Rungs 1-6 (body, parse, JSON-RPC shape, A2A shape, text size, six fields) are here; the
receiving pipeline (``arrival.py``) composes 4-10 for the door and the relay drain alike.

Every refusal is an ``RpcError`` carrying a JSON-RPC code, a fixed message and a rule name.
None of them carries text the caller sent (a verdict, not a diagnosis), so an error can be
written back to a stranger as it is.
"""

from __future__ import annotations

import math
import re
from enum import IntEnum
from typing import Any

from muretai_cli.artifacts.message import text_of_parts
from muretai_cli.errors import MuretaiError
from muretai_cli.seam import MAX_ID_LEN, MAX_SAFE_INT, MAX_TEXT

MAX_ID = MAX_ID_LEN  # characters of messageId and of contextId (the seam's cap on messageId)
METHODS = ("message/send", "contact/redeem", "onboard/claim", "introduce/propose",
           "introduce/respond")



class Code(IntEnum):
    """Every JSON-RPC error code a door answers with, named once (``docs/door.md``'s table)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SIGNATURE = -32001
    REPLAY_OR_STALE = -32002
    NOT_FOR_ME = -32003
    RATE_LIMITED = -32004
    TEXT_TOO_LARGE = -32005
    INTRODUCTION_REQUIRED = -32010
    GRANT_REFUSED = -32011
    # An introduction that is broken, retargeted, expired, replayed or revoked: the public
    # contract's -32011 ("invalid or revoked"), the same number as a refused grant.
    INTRODUCTION_INVALID = -32011
    ISSUER_NOT_TRUSTED = -32013  # a valid introduction whose issuer is not the owner's contact
    AWAITING_APPROVAL = -32014
    CANNOT_VERIFY = -32006  # a number hazard: the signer's bytes cannot be reproduced
    KEYSTATE_REFUSED = -32041  # the attached KeyState (the seam's code)


MESSAGES: dict[int, str] = {
    Code.PARSE_ERROR: "Parse error",
    Code.INVALID_REQUEST: "Invalid Request",
    Code.METHOD_NOT_FOUND: "Method not found",
    Code.INVALID_PARAMS: "Invalid params",
    Code.INTERNAL_ERROR: "Internal error",
    Code.SIGNATURE: "Signature verification failed",
    Code.REPLAY_OR_STALE: "Replay or stale message",
    Code.NOT_FOR_ME: "Message not addressed to me",
    Code.RATE_LIMITED: "Rate limited",
    Code.TEXT_TOO_LARGE: "Message text too large",
    Code.INTRODUCTION_REQUIRED: "Introduction required",
    Code.GRANT_REFUSED: "Contact grant refused",
    Code.ISSUER_NOT_TRUSTED: "Issuer not trusted",
    Code.AWAITING_APPROVAL: "Awaiting approval",
    Code.CANNOT_VERIFY: "Cannot verify this signature",
    Code.KEYSTATE_REFUSED: "KeyState refused",
}


class RpcError(Exception):
    """A verdict: JSON-RPC ``code``, a rule name (``reason``), an HTTP status and ``data``.

    ``detail`` is our own sentence for the owner's record (a drained deposit's refusal); it
    is never written back to the sender, whose answer carries the code's fixed message."""

    def __init__(self, code: Code, reason: str, *, status: int = 200,
                 data: dict[str, Any] | None = None,
                 headers: tuple[tuple[bytes, bytes], ...] = (),
                 detail: str | None = None) -> None:
        super().__init__(f"{int(code)} {reason}")
        self.code = code
        self.reason = reason
        self.status = status
        self.data = data
        self.headers = headers
        self.detail = detail

    def error_object(self) -> dict[str, Any]:
        data = self.data if self.data is not None else {"reason": self.reason}
        return {"code": int(self.code), "message": MESSAGES[self.code], "data": data}


def refused(code: Code, exc: MuretaiError) -> RpcError:
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
        raise RpcError(Code.PARSE_ERROR, exc.code, status=400) from None
    if not isinstance(doc, dict):
        raise RpcError(Code.INVALID_REQUEST, "not-an-object", status=400)
    if b"\\u0000" in raw and _NUL_ESCAPE.search(raw):
        raise RpcError(Code.INVALID_REQUEST, "nul-character")
    return doc


# -- rung 3: JSON-RPC shape and method ---------------------------------------------------
def rpc_shape(doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(method, params)`` of a JSON-RPC 2.0 call to one of our methods."""
    if doc.get("jsonrpc") != "2.0":
        raise RpcError(Code.INVALID_REQUEST, "not-jsonrpc-2.0")
    method = doc.get("method")
    if not isinstance(method, str) or method not in METHODS:
        raise RpcError(Code.METHOD_NOT_FOUND, "unknown-method")
    params = doc.get("params")
    if not isinstance(params, dict):
        raise RpcError(Code.INVALID_PARAMS, "params-not-an-object")
    return method, params


# -- rung 4: the A2A message shape -------------------------------------------------------
def a2a_message(params: dict[str, Any]) -> dict[str, Any]:
    """The envelope read from ``params.message`` (six fields + ``sig``), shape checked only."""
    msg = params.get("message")
    if not isinstance(msg, dict):
        raise RpcError(Code.INVALID_PARAMS, "message-not-an-object")
    if msg.get("kind") != "message":
        raise RpcError(Code.INVALID_REQUEST, "not-a2a-message")
    if msg.get("role") != "user":
        raise RpcError(Code.INVALID_REQUEST, "role-not-user")
    mid = msg.get("messageId")
    if not isinstance(mid, str) or not 0 < len(mid) <= MAX_ID:
        raise RpcError(Code.INVALID_REQUEST, "bad-message-id")
    ctx = msg.get("contextId")
    if ctx is not None and (not isinstance(ctx, str) or len(ctx) > MAX_ID):
        raise RpcError(Code.INVALID_REQUEST, "bad-context-id")
    meta = msg.get("metadata")
    if meta is None:
        meta = {}
    elif not isinstance(meta, dict):
        raise RpcError(Code.INVALID_REQUEST, "metadata-not-an-object")
    for key in ("from", "to", "sig"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise RpcError(Code.INVALID_REQUEST, f"bad-{key}")
    try:
        text = text_of_parts(msg.get("parts"))
    except MuretaiError as exc:
        raise refused(Code.INVALID_REQUEST, exc) from None
    if not any(part["text"] for part in msg["parts"]):  # no parts, or only empty ones:
        # nothing was said, nothing to store (two empty parts join to "\n", still nothing)
        raise RpcError(Code.INVALID_REQUEST, "empty-text")
    return {"contextId": ctx, "from": meta.get("from"), "messageId": mid, "text": text,
            "timestamp": meta.get("timestamp"), "to": meta.get("to"), "sig": meta.get("sig"),
            "relay": _relay_hint(meta.get("relay")), "replyTo": _id_hint(meta.get("replyTo")),
            "keystate": meta.get("keystate"), "vc": meta.get("vc"),
            "heldVc": meta.get("held_vc"),
            "heldReach": tuple(meta.get(k) for k in ("held_vc_url", "held_vc_relay",
                                                     "held_vc_enc_pub"))}


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
        raise RpcError(Code.TEXT_TOO_LARGE, "text-too-large")


# -- rung 6: the six fields present and typed ----------------------------------------------
def six(env: dict[str, Any], terms: dict[str, Any]) -> dict[str, Any]:
    """The six fields; a keyless walk-in (no from, to or sig) is told the door's terms."""
    from muretai_cli.seam import six_fields

    if env.get("from") is None and env.get("to") is None and env.get("sig") is None:
        raise RpcError(Code.SIGNATURE, "no-envelope", data={"reason": "no-envelope",
                                                            "accepts": [terms]})
    if env.get("sig") is None:
        raise RpcError(Code.SIGNATURE, "missing-sig")
    try:
        return six_fields(env)
    except MuretaiError as exc:
        raise refused(Code.SIGNATURE, exc) from None


# -- what follows (recipient, freshness, the replay lookup, the signature) is the
# receiving pipeline's: ``inbox/arrival.py``
