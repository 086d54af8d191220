"""Tool arguments, checked: each arrives untyped (``Any``) and is narrowed here or refused.

A bad argument raises ``InputError`` with a code the agent can act on (``missing-argument``,
``bad-argument``, ``too-large``, ``bad-did``, ``bad-url``); the tool wrapper turns it into a
refusal, so a wrong type or size never reaches the library as a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import InputError, MuretaiError

if TYPE_CHECKING:
    from muretai_cli.net import SafeClient

MAX_ID = 200  # a request id or nonce is short; anything longer is not one
MAX_URL = 2048
MAX_OBJECT = 64 * 1024  # bytes of a JSON argument (a grant, a tool result) as sent


def string(value: Any, name: str, *, limit: int, required: bool = True) -> str | None:
    """``value`` as a string of at most ``limit`` UTF-8 bytes; None when absent and optional."""
    if value is None:
        if required:
            raise InputError("missing-argument", f"{name} is required")
        return None
    if not isinstance(value, str):
        raise InputError("bad-argument", f"{name} must be a string, not {type(value).__name__}")
    if len(value.encode("utf-8", "surrogatepass")) > limit:
        raise InputError("too-large", f"{name} is longer than {limit} bytes")
    if required and not value:
        raise InputError("missing-argument", f"{name} is empty")
    return value


def required(value: Any, name: str, *, limit: int) -> str:
    """``string``, required: a missing or empty value is refused."""
    text = string(value, name, limit=limit)
    if text is None:  # string refuses a missing value; this says so to the type checker
        raise InputError("missing-argument", f"{name} is required")
    return text


def did(value: Any, name: str) -> str:
    """A did:key (checked by the seam's own decoder), or ``bad-did``."""
    from muretai_cli.seam import public_from_did

    text = required(value, name, limit=MAX_ID)
    try:
        public_from_did(text)
    except MuretaiError as exc:
        raise InputError("bad-did", f"{name} is not a did:key: {exc.detail}",
                         hint="give the peer's DID, did:key:z6Mk…") from None
    return text


def url(value: Any, name: str, *, required_: bool = True) -> str | None:
    """An http(s) URL muretai may dial (https, or http on loopback), as given; None when
    absent and optional. ``bad-url`` otherwise."""
    from muretai_cli.urls import base_from_any

    text = string(value, name, limit=MAX_URL, required=required_)
    if text is None:
        return None
    if not text.lower().startswith(("https://", "http://")):
        raise InputError("bad-url", f"{name} must be an https:// URL",
                         hint="give the site's base URL or its card URL")
    base_from_any(text)  # refuses what no card rule would dial (bad-url)
    return text


def json_object(value: Any, name: str) -> dict[str, Any]:
    """A JSON object of at most ``MAX_OBJECT`` bytes (an MCP client sends it parsed; a string
    holding one is parsed here, through the project's parse boundary)."""
    import json

    from muretai_cli.seam import parse_document

    if isinstance(value, str):
        if len(value.encode("utf-8", "surrogatepass")) > MAX_OBJECT:
            raise InputError("too-large", f"{name} is larger than {MAX_OBJECT} bytes")
        value = parse_document(value.encode("utf-8", "surrogatepass"))
    if value is None:
        raise InputError("missing-argument", f"{name} is required")
    if not isinstance(value, Mapping):
        raise InputError("bad-argument", f"{name} must be a JSON object, not "
                                         f"{type(value).__name__}")
    try:
        size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        raise InputError("bad-argument", f"{name} is not plain JSON") from None
    if size > MAX_OBJECT:
        raise InputError("too-large", f"{name} is larger than {MAX_OBJECT} bytes")
    return dict(value)


def client_for(seconds: float, max_bytes: int, *, deadline_hint: str | None = None
               ) -> SafeClient:
    """The project's safe HTTP client, for every request a tool makes."""
    from muretai_cli.net import SafeClient

    if deadline_hint is None:
        return SafeClient(timeout=seconds, max_bytes=max_bytes)
    return SafeClient(timeout=seconds, max_bytes=max_bytes, deadline_hint=deadline_hint)
