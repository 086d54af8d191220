"""Base URLs in one canonical form, and the loopback rule.

A *base URL* names where an agent lives: scheme, host, optional port, optional path, and
nothing else. Two spellings that differ only in the case of scheme or host, a default
port, a trailing dot on the host or trailing slashes are the same base; anything else that
is not canonical (a query, a fragment, userinfo, ``.``/``..`` segments, ``%2e``, a
non-ASCII host) is refused with the value to use instead.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from muretai_cli.errors import InputError, MuretaiError

CARD_PATH = "/.well-known/agent-card.json"
LEGACY_CARD_PATH = "/.well-known/agent.json"
CARD_SIG_PATH = "/.well-known/agent-card.sig.json"
# An issuer's signed list of the introductions it revoked (ours: docs/trust.md).
REVOCATIONS_PATH = "/.well-known/muretai-revocations.json"
# The absolute relation agent-entry names its door with (RFC 8288 §2.1.2: an unregistered
# relation is a URI); beside it a door's notice sends RFC 8631's registered "service-desc".
AGENT_ENTRY_REL = "https://muretai.net/rel/agent-entry"
DID_SITE_HOST = "muretai.net"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_CHARS = re.compile(r"[a-z0-9.-]+|\[[0-9a-f:.]+\]")
_PATH_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*")  # RFC 3986 pchar and "/"
_MAX_URL = 2048
# Spaces, C0 controls and DEL: never part of a URL a muretai command will read.
URL_FORBIDDEN = re.compile(r"[\x00-\x20\x7f]")


def is_loopback_host(host: str) -> bool:
    """``localhost``, 127.0.0.0/8 and ``::1`` (brackets optional)."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origin_of(url: str, *, https_unless_loopback: bool = False) -> str | None:
    """The canonical origin (``scheme://host[:port]``) of any http(s) URL, or None.

    Unlike ``parse_base_url`` this accepts a path, query or fragment (it only reads the
    origin). None for userinfo, no host, another scheme, or -- with
    ``https_unless_loopback`` -- plain http to a host that is not loopback.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".").lower()
    if scheme not in _DEFAULT_PORTS or not host or "@" in parts.netloc:
        return None
    if https_unless_loopback and scheme == "http" and not is_loopback_host(host):
        return None
    if ":" in host:
        host = f"[{host}]"
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    return f"{scheme}://{host}" + (f":{port}" if port is not None else "")


@dataclass(frozen=True, slots=True)
class BaseUrl:
    """A canonical base URL. Construct it with ``parse_base_url``."""

    scheme: str
    host: str  # lowercased; IPv6 in brackets
    port: int | None  # None when default
    path: str  # "" or "/a/b" (no trailing slash)

    @property
    def origin(self) -> str:
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{self.host}{port}"

    @property
    def text(self) -> str:
        return self.origin + self.path

    def join(self, suffix: str) -> str:
        """``suffix`` (starting with ``/``) hung off this base's path."""
        return self.origin + self.path + suffix

    @property
    def is_loopback(self) -> bool:
        return is_loopback_host(self.host)

    def __str__(self) -> str:
        return self.text


def _refuse(url: str, why: str, suggestion: str | None = None) -> InputError:
    hint = f"use {suggestion}" if suggestion else None
    return InputError("bad-url", f"{url[:200]!r}: {why}", hint=hint)


def parse_base_url(url: str, *, require_https: bool = True) -> BaseUrl:
    """Parse and canonicalise a base URL, or raise ``InputError('bad-url')``.

    With ``require_https``, plain http is accepted only for loopback hosts.
    """
    if not isinstance(url, str) or not url or len(url) > _MAX_URL:
        raise _refuse(str(url)[:200], "not a URL of reasonable length")
    if URL_FORBIDDEN.search(url):
        raise _refuse(url, "contains spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise _refuse(url, f"cannot be parsed ({exc})") from None
    scheme = parts.scheme.lower()
    if "://" not in url and (not scheme or re.fullmatch(r"[^:/]+:[0-9]+(/.*)?", url)):
        # `host`, `host:port`, `host/path`: a scheme was left out
        bare = url.lstrip("/")
        loopback = re.match(r"(localhost|127\.[0-9.]+|\[::1\])(:|/|$)", bare, re.I)
        raise _refuse(url, "has no scheme (https://, or http:// on loopback)",
                      ("http://" if loopback else "https://") + bare)
    if scheme not in _DEFAULT_PORTS:
        raise _refuse(url, "the scheme must be https (or http on loopback)")
    netloc = parts.netloc
    if "@" in netloc:
        raise _refuse(url, "userinfo (user@) is not allowed in a base URL")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise _refuse(url, "has no host")
    if not host.isascii():
        raise _refuse(url, "the host is not ASCII; write it in punycode (xn--...)")
    host = host.lower()
    if ":" in host:
        host = f"[{host}]"
    if not _HOST_CHARS.fullmatch(host):
        raise _refuse(url, f"the host {host!r} has characters a hostname cannot have")
    if port is not None and port == _DEFAULT_PORTS[scheme]:
        port = None
    path = parts.path.rstrip("/")
    canonical = BaseUrl(scheme, host, port, path)
    if parts.query or url.rstrip("/").endswith("?"):
        raise _refuse(url, "a base URL carries no query", canonical.text)
    if parts.fragment or "#" in url:
        raise _refuse(url, "a base URL carries no fragment", canonical.text)
    if not _PATH_CHARS.fullmatch(path):
        raise _refuse(url, "the path has characters a URL path cannot carry unencoded; "
                           "percent-encode them")
    lowered = path.lower()
    segments = path.split("/")[1:]
    if "%2e" in lowered or any(s in (".", "..") for s in segments):
        raise _refuse(url, "dot segments (. .. %2e) are not allowed in a base URL")
    if any(not s for s in segments):
        raise _refuse(url, "empty path segments (//) are not allowed",
                      canonical.origin + "/" + "/".join(s for s in segments if s))
    if require_https and scheme == "http" and not is_loopback_host(host):
        raise _refuse(url, "plain http is accepted only for loopback hosts",
                      "https://" + canonical.text.split("://", 1)[1])
    return canonical


def base_from_any(url: str, *, require_https: bool = True) -> BaseUrl:
    """A base URL from either the base itself or the full card URL under it."""
    trimmed = url.rstrip("/") if isinstance(url, str) else url
    for suffix in (CARD_PATH, LEGACY_CARD_PATH, CARD_SIG_PATH):
        if isinstance(trimmed, str) and trimmed.lower().endswith(suffix):
            trimmed = trimmed[: -len(suffix)] or trimmed
            break
    return parse_base_url(trimmed, require_https=require_https)


def same_base(a: str, b: BaseUrl) -> bool:
    """Whether URL text ``a`` names the same canonical base as ``b`` (never raises)."""
    try:
        return parse_base_url(a, require_https=False) == b
    except InputError:
        return False


def did_site_key(base: BaseUrl) -> str | None:
    """For a DID-addressed site (``https://muretai.net/<zKey>``), the DID it names."""
    if base.host != DID_SITE_HOST:
        return None
    segments = base.path.split("/")[1:]
    if len(segments) != 1 or not segments[0].startswith("z"):
        return None
    from muretai_cli.seam import public_from_did

    did = f"did:key:{segments[0]}"
    try:
        public_from_did(did)
    except MuretaiError:
        return None  # not a key: an ordinary origin, whose card must vouch for any `to`
    return did
