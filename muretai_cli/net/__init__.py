"""One safe HTTP client for everything muretai fetches or posts.

    SafeClient      GET for probing, one POST for JSON-RPC (never retried)
    ClientFor       ``client_for(seconds, max_bytes)``: what makes one, for a fetcher
    HttpResult      what came back: status, lowercased headers, body (at most the cap)
    Deadline        one deadline shared by every request of a command
    private_addresses  the non-global addresses a host names (the SSRF rule's input)
    http_refusal    an HTTP error status as ``PeerRefused`` (429/503 carry ``retryAfter``)

Rules: a shared deadline (a request not started before it is skipped and recorded); a
streamed byte cap (the rest of a larger body is never read); no automatic redirects (one
to another origin is discarded and reported; same-origin ones are followed a bounded
number of times, for GET only); plain http only on loopback; ``User-Agent: muretai/<v>``.

Errors: ``Unreachable`` (3) when the peer cannot be reached, ``DeadlineExceeded`` (5) when
the deadline runs out, ``PeerRefused`` (4) for an HTTP refusal, ``Refused`` (1) for a body
over the cap or a redirect to another origin, ``InputError`` (2) for a URL refused before
dialling. httpx loads only when a client is made, so offline commands never import it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from muretai_cli.net._address import private_addresses
from muretai_cli.net._deadline import Deadline

if TYPE_CHECKING:
    from muretai_cli.net._client import (
        HttpResult,
        SafeClient,
        check_request_url,
        http_refusal,
        retry_after_seconds,
        user_agent,
    )

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_BYTES = 1024 * 1024
MAX_REDIRECTS = 3

# What a caller hands a fetcher that opens its own clients: ``client_for(seconds,
# max_bytes)`` makes one ``SafeClient`` with that timeout and body cap.
ClientFor = Callable[[float, int], "SafeClient"]

_LAZY = {"HttpResult", "SafeClient", "check_request_url", "http_refusal",
         "retry_after_seconds", "user_agent"}

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "MAX_REDIRECTS",
    "ClientFor",
    "Deadline",
    "HttpResult",
    "SafeClient",
    "check_request_url",
    "http_refusal",
    "private_addresses",
    "retry_after_seconds",
    "user_agent",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'muretai_cli.net' has no attribute {name!r}")
    value = getattr(importlib.import_module("muretai_cli.net._client"), name)
    globals()[name] = value
    return value
