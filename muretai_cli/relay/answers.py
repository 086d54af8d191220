"""What a relay route answers, and the checks of its request's fields: every answer is
``(status, JSON body, extra headers)``; a refusal is ``{"error": CODE, "message": TEXT}``;
a field that breaks its rule is a 400 ``malformed`` naming the field."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, NoReturn

from muretai_cli.errors import MuretaiError
from muretai_cli.seam import parse_document, public_from_did
from muretai_cli.transport.asgi import Headers

Answer = tuple[int, bytes, Headers]
JSON_HEADERS: Headers = ((b"content-type", b"application/json; charset=utf-8"),
                         (b"cache-control", b"no-store"),
                         (b"access-control-allow-origin", b"*"))
encode_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def dumps(doc: dict[str, Any]) -> bytes:
    return encode_json(doc).encode("utf-8")


class Refusal(Exception):
    """A route's refusal: HTTP status, error code, a message for people."""

    def __init__(self, status: int, code: str, message: str,
                 headers: Headers = ()) -> None:
        super().__init__(code)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers

    def answer(self) -> Answer:
        return self.status, dumps({"error": self.code, "message": self.message}), \
            self.headers + JSON_HEADERS


def refusal_answer(status: int, code: str, message: str) -> Answer:
    return Refusal(status, code, message).answer()


def ok(doc: dict[str, Any]) -> Answer:
    return 200, dumps(doc), JSON_HEADERS


def malformed(message: str) -> NoReturn:
    raise Refusal(400, "malformed", message)


def json_object(raw: bytes) -> dict[str, Any]:
    try:
        doc = parse_document(raw)
    except MuretaiError as exc:
        malformed(f"the body is not a JSON document ({exc.code})")
    if not isinstance(doc, dict):
        malformed("the body is a JSON object")
    return doc


def str_field(doc: dict[str, Any], name: str) -> str:
    value = doc.get(name)
    if not isinstance(value, str):
        malformed(f"{name} must be a string")
    return value


def int_field(doc: dict[str, Any], name: str, *, low: int, high: int) -> int:
    value = doc.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        malformed(f"{name} must be an integer from {low} to {high}")
    return value


@lru_cache(maxsize=65536)
def did_problem(did: str) -> str | None:
    """Why ``did`` is not an Ed25519 did:key, or None. Cached: base58 is costly in Python,
    and the same DIDs deposit and listen again and again."""
    try:
        curve, _ = public_from_did(did)
    except MuretaiError as exc:
        return f"not a did:key ({exc.detail})"
    return None if curve == "ed25519" else "not an Ed25519 did:key"


def did_field(doc: dict[str, Any], name: str) -> str:
    did = str_field(doc, name)
    problem = did_problem(did)
    if problem is not None:
        malformed(f"{name} is {problem}")
    return did
