"""The handoff envelope of a WebMCP tool result: structure only, no trust.

Read from exactly three places, in this order: ``_meta.handoff``, top-level ``handoff``,
and the legacy ``muretai`` key (read as one ``dm`` entry). Nothing else in a result -- text
in ``content``, ``structuredContent``, annotations -- can create, add or reorder an entry.

    {"v": 1, "next": [entry, ...]}
    entry := {"kind": "dm",  "to": did, "message"?, "connect"?}
           | {"kind": "a2a", "to"?, "endpoint"?, "card"?, "message"?}   (at least one of the three)
           | {"kind": "ui",  "url", "why"?}
           | {"kind": "mcp", "server"}

Entries of unknown kind, or missing or mistyping a field, are dropped with a reason. Fields
such as ``from``, ``as`` or ``agent_name`` are never read: a visitor's identity is its key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from muretai_cli.urls import URL_FORBIDDEN, origin_of

Kind = Literal["dm", "a2a", "ui", "mcp"]
MAX_ENTRIES = 64
SOURCES = ("_meta.handoff", "handoff", "muretai")
_REQUIRED: dict[str, tuple[str, ...]] = {"dm": ("to",), "ui": ("url",), "mcp": ("server",)}
_TEXT_FIELDS = ("to", "message", "endpoint", "card", "url", "why", "server")
_URL_FIELDS = ("endpoint", "card", "url", "server")
MAX_URL = 2048


def _web_url(value: str) -> bool:
    """An http(s) URL with a host, in ASCII, with no spaces or controls (no javascript:).

    A URL on the wire is ASCII (RFC 3986); anything else -- bidi overrides included -- is a
    spelling meant for a person's eyes, not a link.
    """
    return (len(value) <= MAX_URL and value.isascii()
            and URL_FORBIDDEN.search(value) is None
            and origin_of(value) is not None)


@dataclass(slots=True, unsafe_hash=True)  # built per entry: not frozen (3x the init)
class HandoffEntry:
    """One usable entry, exactly as the site suggested it (a suggestion, never trust)."""

    kind: Kind
    source: str
    index: int
    to: str | None = None
    message: str | None = None
    connect: dict[str, Any] | str | None = None
    endpoint: str | None = None
    card: str | None = None
    url: str | None = None
    why: str | None = None
    server: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "source": self.source, "index": self.index}
        for name in ("to", "message", "connect", "endpoint", "card", "url", "why", "server"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


@dataclass(frozen=True, slots=True)
class DroppedEntry:
    source: str
    index: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "index": self.index, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Handoff:
    """What a result's handoff keys say. ``present`` is False when no entry survived."""

    entries: tuple[HandoffEntry, ...] = ()
    dropped: tuple[DroppedEntry, ...] = ()
    sources: tuple[str, ...] = field(default=())

    @property
    def present(self) -> bool:
        return bool(self.entries)

    def to_json(self) -> dict[str, Any]:
        return {"present": self.present, "sources": list(self.sources),
                "entries": [e.to_json() for e in self.entries],
                "dropped": [d.to_json() for d in self.dropped]}


def unwrap_result(doc: object) -> object:
    """A tool result wrapped in a JSON-RPC response is unwrapped (once)."""
    if isinstance(doc, dict) and "jsonrpc" in doc and isinstance(doc.get("result"), dict):
        return doc["result"]
    return doc


def _entry(raw: object, source: str, index: int) -> HandoffEntry | DroppedEntry:
    if not isinstance(raw, dict):
        return DroppedEntry(source, index, "not-an-object")
    kind = raw.get("kind")
    if kind not in ("dm", "a2a", "ui", "mcp"):
        return DroppedEntry(source, index, f"unknown-kind: {str(kind)[:40]!r}")
    for name in _TEXT_FIELDS:
        if name in raw and raw[name] is not None and not isinstance(raw[name], str):
            return DroppedEntry(source, index, f"bad-field: {name} must be a string")
    for name in _REQUIRED.get(kind, ()):
        if not raw.get(name):
            return DroppedEntry(source, index, f"missing-field: a {kind} entry needs {name}")
    if kind == "a2a" and not any(raw.get(n) for n in ("to", "endpoint", "card")):
        return DroppedEntry(source, index, "missing-field: an a2a entry needs to, endpoint "
                                           "or card")
    for name in _URL_FIELDS:
        if raw.get(name) and not _web_url(raw[name]):
            return DroppedEntry(source, index, f"bad-field: {name} must be an http(s) URL")
    connect = raw.get("connect")
    if connect is not None and not isinstance(connect, dict | str):
        return DroppedEntry(source, index, "bad-field: connect must be a grant or a card URL")
    if isinstance(connect, str) and connect and not _web_url(connect):
        return DroppedEntry(source, index, "bad-field: connect must be an http(s) card URL")
    values = {n: raw.get(n) or None for n in _TEXT_FIELDS}
    return HandoffEntry(kind=kind, source=source, index=index, connect=connect or None,
                        **values)


def _envelope_entries(envelope: object, source: str) -> tuple[list[object], str | None]:
    if not isinstance(envelope, dict):
        return [], "not-an-object"
    if type(envelope.get("v")) is not int or envelope.get("v") != 1:  # not True, not 1.0
        return [], f"unsupported-version: {str(envelope.get('v'))[:20]}"
    if source == "muretai":
        if envelope.get("action") != "dm":
            return [], f"unknown-action: {str(envelope.get('action'))[:40]!r}"
        legacy = {"kind": "dm", "to": envelope.get("to"), "connect": envelope.get("connect"),
                  "message": envelope.get("suggested_message")}
        return [legacy], None
    entries = envelope.get("next")
    if not isinstance(entries, list):
        return [], "next-not-a-list"
    return entries, None


def parse_handoff(result: object) -> Handoff:
    """The handoff a tool result carries, read only from its three reserved keys."""
    result = unwrap_result(result)
    if not isinstance(result, dict):
        return Handoff()
    meta = result.get("_meta")
    found = {
        "_meta.handoff": meta.get("handoff") if isinstance(meta, dict) else None,
        "handoff": result.get("handoff"),
        "muretai": result.get("muretai"),
    }
    entries: list[HandoffEntry] = []
    dropped: list[DroppedEntry] = []
    sources: list[str] = []
    for source in SOURCES:
        envelope = found[source]
        if envelope is None:
            continue
        sources.append(source)
        raws, problem = _envelope_entries(envelope, source)
        if problem:
            dropped.append(DroppedEntry(source, -1, problem))
        for index, raw in enumerate(raws):
            if len(entries) + len(dropped) >= MAX_ENTRIES:
                dropped.append(DroppedEntry(source, index, "too-many-entries"))
                break
            item = _entry(raw, source, index)
            (entries if isinstance(item, HandoffEntry) else dropped).append(item)  # type: ignore[arg-type]
    return Handoff(tuple(entries), tuple(dropped), tuple(sources))
