"""A2A messages that carry the six signed fields in ``metadata``.

The signed ``text`` is the message's text parts joined in order with ``"\n"`` (as every
reference derives it: agent-seam's ``Message.from_a2a``, agent-entry). A message with any
other kind of part is refused: that content would travel outside the signature.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from muretai_cli.errors import Refused
from muretai_cli.seam import SigningKey, sign_envelope

MESSAGE_SEND = "message/send"
# What a muretai door's card says (card.muretai.replyBinding) when its answers are bound to
# the request they answer: v1, a reply's messageId is ``reply_message_id``; v2 (this door),
# the same, and its automatic receipt's is ``receipt_message_id``. A visitor that reads
# either requires one of the two.
REPLY_BINDING_V1 = "messageId-sha256-v1"
REPLY_BINDING = "messageId-sha256-v2"
REPLY_BINDINGS = (REPLY_BINDING_V1, REPLY_BINDING)
_REPLY_DOMAIN = b"muretai-reply-v1"
_RECEIPT_DOMAIN = b"muretai-receipt-v1"


def reply_message_id(sender: str, request_message_id: str) -> str:
    """The signed ``messageId`` of a door's reply to ``request_message_id`` from ``sender``.

    ``"r-"`` + the first 32 hex characters of ``sha256("muretai-reply-v1" 0x00 sender 0x00
    messageId)`` (UTF-8): a fixed function of the request, so the reply's signature covers
    which message it answers, and a reply kept from one request cannot answer another.
    """
    digest = hashlib.sha256(b"\0".join((_REPLY_DOMAIN, sender.encode("utf-8"),
                                        request_message_id.encode("utf-8")))).hexdigest()
    return f"r-{digest[:32]}"


def receipt_message_id(sender: str, request_message_id: str) -> str:
    """The signed ``messageId`` of a door's automatic receipt for ``request_message_id``
    from ``sender`` (delivered, nobody has answered yet): ``"d-"`` + the first 32 hex
    characters of ``sha256("muretai-receipt-v1" 0x00 sender 0x00 messageId)``.

    The door's signature covers it, so nothing in between can make a receipt read as an
    answer (or an answer as a receipt) without breaking the signature; and, like the reply's,
    it binds the receipt to the one request it acknowledges."""
    digest = hashlib.sha256(b"\0".join((_RECEIPT_DOMAIN, sender.encode("utf-8"),
                                        request_message_id.encode("utf-8")))).hexdigest()
    return f"d-{digest[:32]}"


def new_context_id() -> str:
    """A fresh conversation id (128 random bits): a new conversation never has a null one."""
    return f"c-{secrets.token_hex(16)}"


# What joins a message's text parts into the one signed ``text`` (seam §3, the references).
PART_SEPARATOR = "\n"


def text_of_parts(parts: object) -> str:
    """The signed text: the message's text parts joined in order with ``PART_SEPARATOR``.

    Each part must be exactly ``{"kind": "text", "text": str}``. Anything else a part could
    carry -- a file, data, metadata, or a part of another kind (``kind`` missing included) --
    would travel beside a signature that does not cover it, so it is refused.
    """
    if not isinstance(parts, list):
        raise Refused("not-a2a-message", "parts must be a list")
    texts: list[str] = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            raise Refused("not-a2a-message", f"parts[{index}] is not an object")
        if part.get("kind") != "text":
            raise Refused("non-text-part", f"parts[{index}] is a {str(part.get('kind'))[:40]!r} "
                                           "part; only text is covered by the signature")
        extra = sorted(set(part) - {"kind", "text"})
        if extra:
            raise Refused("non-text-part", f"parts[{index}] also carries {', '.join(extra)[:80]}, "
                                           "which the signature does not cover")
        if not isinstance(part.get("text"), str):
            raise Refused("not-a2a-message", f"parts[{index}].text is not a string")
        texts.append(part["text"])
    return PART_SEPARATOR.join(texts)


def message_of(doc: object) -> dict[str, Any]:
    """The A2A message inside a ``message/send`` request (or the document itself if bare)."""
    if not isinstance(doc, dict):
        raise Refused("not-a2a-message", "expected a JSON object")
    return _message_of(doc)


def _message_of(doc: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise Refused("not-a2a-message", "expected a JSON object")
    if isinstance(doc.get("result"), dict):  # a JSON-RPC response carrying a Message
        doc = doc["result"]
    elif "jsonrpc" in doc or "method" in doc:
        if doc.get("method") != MESSAGE_SEND:
            raise Refused("not-a2a-message", f"method is {doc.get('method')!r}, not message/send")
        params = doc.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("message"), dict):
            raise Refused("not-a2a-message", "params.message must be an object")
        doc = params["message"]
    if doc.get("kind", "message") != "message":
        raise Refused("not-a2a-message", f"kind is {doc.get('kind')!r}, not 'message'")
    return doc


def envelope_of(doc: object) -> dict[str, Any]:
    """Six fields + ``sig`` read from an A2A message (request, reply or bare).

    ``contextId`` missing is null. Nothing is checked cryptographically here.
    """
    message = message_of(doc)
    meta = message.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise Refused("not-a2a-message", "metadata must be an object")
    out: dict[str, Any] = {
        "contextId": message.get("contextId"),
        "from": meta.get("from"),
        "messageId": message.get("messageId"),
        "text": text_of_parts(message.get("parts", [])),
        "timestamp": meta.get("timestamp"),
        "to": meta.get("to"),
        "sig": meta.get("sig"),
    }
    if "replyTo" in meta:
        out["replyTo"] = meta["replyTo"]
    return out


def build_message(env: Mapping[str, Any], *, role: str = "user",
                  reply_to: str | None = None) -> dict[str, Any]:
    """An A2A Message carrying a signed envelope (``env`` = six fields + ``sig``)."""
    metadata: dict[str, Any] = {"from": env["from"], "to": env["to"],
                                "timestamp": env["timestamp"], "sig": env["sig"]}
    if reply_to is not None:
        metadata["replyTo"] = reply_to
    message: dict[str, Any] = {
        "kind": "message",
        "role": role,
        "messageId": env["messageId"],
        "parts": [{"kind": "text", "text": env["text"]}],
        "metadata": metadata,
    }
    if env.get("contextId") is not None:
        message["contextId"] = env["contextId"]
    return message


def build_message_send(message: Mapping[str, Any], request_id: str | int | None = None
                       ) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id if request_id is not None
            else f"req-{secrets.token_hex(6)}", "method": MESSAGE_SEND,
            "params": {"message": dict(message)}}


@dataclass(frozen=True, slots=True)
class Delegated:
    """An operational key signing for a root DID, with the root-signed KeyState saying so:
    its messages are ``from`` the root, signed by ``op``, the record in ``metadata.keystate``."""

    op: SigningKey
    root_did: str
    keystate: Mapping[str, Any]


def signed_message(key: SigningKey | Delegated, *, to: str, text: str, now: int,
                   context_id: str | None = None, role: str = "user",
                   reply_to: str | None = None, message_id: str | None = None,
                   metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Sign the six fields and wrap them as an A2A Message (``metadata``: unsigned extras).
    A ``Delegated`` key signs as its op key for its root, and attaches the record."""
    signer, root = (key.op, key.root_did) if isinstance(key, Delegated) else (key, None)
    env = sign_envelope(signer, to=to, text=text, timestamp=now, context_id=context_id,
                        message_id=message_id, from_did=root)
    message = build_message(env, role=role, reply_to=reply_to)
    extra = dict(metadata or {})
    if isinstance(key, Delegated):
        extra["keystate"] = dict(key.keystate)
    if extra:
        message["metadata"] = {**extra, **message["metadata"]}
    return message
