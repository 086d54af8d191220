"""What a site puts up for agents besides its card, read from bytes a stranger sent.

    parse_links         a ``Link`` header field → ``Link`` values (RFC 8288)
    parse_mcp_card      ``/.well-known/mcp.json`` → ``McpCard`` or ``InputError`` naming why
    declared_tools      a page's HTML → the declarative tools it names (WebMCP forms, VOIX)
    parse_robots        ``robots.txt`` → ``Robots`` (may ``*`` fetch this path? RFC 9309)
    plausible           a 200 is the thing asked for, not a catch-all's page

Every parser here is total: it caps what it reads (bytes, items, lengths) and returns a
value or raises ``InputError`` with a named reason; never another exception. Used by the
visitor's ``probe`` and by ``site check``, so both read a site the same way.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin

from muretai_cli.errors import InputError

MAX_LINK_FIELD = 8192
MAX_LINKS = 64
MAX_PAGE = 512 * 1024
MAX_TOOLS = 200
MAX_ROBOTS = 512 * 1024
MAX_ROBOTS_LINES = 10_000
TOOL_NAME_BUDGET = 30  # WebMCP: what an agent is shown of a tool's name …
TOOL_DESCRIPTION_BUDGET = 500  # … and of its description
@dataclass(frozen=True, slots=True)
class Link:
    """One link value: the target as written, and its relation types (lowercased)."""

    href: str
    rels: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"href": self.href, "rel": " ".join(self.rels)}


def parse_links(field: str | None) -> tuple[Link, ...]:
    """Every link value of a ``Link`` field (repeated fields already joined by ``, ``).

    Read left to right in one pass; at most 8 KiB and 64 values. A value that is not
    ``<uri>; param…`` ends the parse there: what came before is kept. Never raises."""
    text = (field or "")[:MAX_LINK_FIELD]
    links: list[Link] = []
    pos, end = 0, len(text)
    while len(links) < MAX_LINKS:
        while pos < end and text[pos] in " \t,":
            pos += 1
        if pos >= end or text[pos] != "<":
            break
        close = text.find(">", pos)
        if close < 0:
            break
        href, pos = text[pos + 1:close].strip(), close + 1
        rels: tuple[str, ...] | None = None
        while True:
            while pos < end and text[pos] in " \t":
                pos += 1
            if pos >= end or text[pos] != ";":
                break
            name, value, pos = _param(text, pos + 1)
            if name == "rel" and rels is None:  # RFC 8288 §3.3: the first rel counts
                rels = tuple(r.lower() for r in value.split()[:16])
        links.append(Link(href[:2048], rels or ()))
        if pos < end and text[pos] not in ",":
            break
    return tuple(links)


def _param(text: str, pos: int) -> tuple[str, str, int]:
    """One ``name[=value]`` of a link value, from ``pos``; the value unquoted."""
    end = len(text)
    start = pos
    while pos < end and text[pos] not in "=;,":
        pos += 1
    name = text[start:pos].strip().lower()
    if pos >= end or text[pos] != "=":
        return name, "", pos
    pos += 1
    while pos < end and text[pos] in " \t":
        pos += 1
    if pos < end and text[pos] == '"':
        out: list[str] = []
        pos += 1
        while pos < end and text[pos] != '"':
            if text[pos] == "\\" and pos + 1 < end:
                pos += 1
            out.append(text[pos])
            pos += 1
        return name, "".join(out), pos + 1
    start = pos
    while pos < end and text[pos] not in ";,":
        pos += 1
    return name, text[start:pos].strip(), pos


def links_to(links: tuple[Link, ...], rel: str) -> list[str]:
    """The targets of the links with relation ``rel``."""
    return [link.href for link in links if rel.lower() in link.rels]


@dataclass(frozen=True, slots=True)
class McpCard:
    """What an MCP server card says: its endpoints, and whether it needs a credential."""

    endpoints: tuple[str, ...]
    open: bool  # it states that no credential is required
    name: str | None

    def to_json(self) -> dict[str, Any]:
        return {"endpoints": list(self.endpoints), "open": self.open, "name": self.name}


def parse_mcp_card(raw: bytes) -> McpCard:
    """``/.well-known/mcp.json`` (or an MCP server card) through the parse boundary.

    Endpoints are read from ``endpoint``, ``url``, ``transport.url``/``endpoint`` and
    ``remotes[].url``/``transports[].url``; the card is open when ``authentication`` is
    null, ``authentication.required`` is false or ``auth`` is ``"none"``. ``InputError``:
    ``malformed-mcp-card`` (not a JSON object, BOM, too deep …), ``mcp-card-no-endpoint``."""
    from muretai_cli.seam import parse_document

    try:
        doc = parse_document(raw)
    except InputError as exc:
        raise InputError("malformed-mcp-card", f"{exc.code}: {exc.detail}") from None
    if not isinstance(doc, dict):
        raise InputError("malformed-mcp-card", "an MCP server card is a JSON object")
    found: list[str] = [doc[k] for k in ("endpoint", "url") if isinstance(doc.get(k), str)]
    transport = doc.get("transport")
    if isinstance(transport, dict):
        found += [transport[k] for k in ("url", "endpoint") if isinstance(transport.get(k), str)]
    for key in ("remotes", "transports"):
        listed = doc.get(key)
        if isinstance(listed, list):
            found += [r["url"] for r in listed[:16]
                      if isinstance(r, dict) and isinstance(r.get("url"), str)]
    endpoints = tuple(dict.fromkeys(e[:2048] for e in found))
    if not endpoints:
        raise InputError("mcp-card-no-endpoint", "the MCP server card names no endpoint "
                                                 "(endpoint, url or remotes[].url)")
    auth = doc.get("authentication")
    is_open = ("authentication" in doc and auth is None) \
        or (isinstance(auth, dict) and auth.get("required") is False) \
        or doc.get("auth") == "none" or (isinstance(doc.get("auth"), dict)
                                         and doc["auth"].get("type") == "none")
    name = doc.get("name") if isinstance(doc.get("name"), str) else None
    return McpCard(endpoints, is_open, name[:200] if name else None)


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool a page declares in its HTML: WebMCP ``<form toolname tooldescription>`` or a
    VOIX ``<tool name description>``. ``over`` names the budgets it exceeds."""

    name: str
    description: str
    kind: str  # "webmcp-form" | "voix"
    method: str  # the form's method (get/post), "" for VOIX
    action: str | None

    @property
    def over(self) -> list[str]:
        out = []
        if len(self.name) > TOOL_NAME_BUDGET:
            out.append(f"name {len(self.name)} > {TOOL_NAME_BUDGET} characters")
        if len(self.description) > TOOL_DESCRIPTION_BUDGET:
            out.append(f"description {len(self.description)} > {TOOL_DESCRIPTION_BUDGET} "
                       "characters")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name[:200], "description": self.description[:600],
                "kind": self.kind, "method": self.method, "action": self.action,
                "nameChars": len(self.name), "descriptionChars": len(self.description),
                "overBudget": self.over}


@dataclass(frozen=True, slots=True)
class PageTools:
    tools: tuple[Tool, ...]
    imperative_hint: bool  # the page mentions modelContext: tools may be registered at run time
    truncated: bool  # the page was longer than what was read


class _ToolFinder(HTMLParser):
    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.tools: list[Tool] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if len(self.tools) >= MAX_TOOLS or tag not in ("form", "tool"):
            return
        a = {k.lower(): (v or "") for k, v in attrs}
        if tag == "form" and a.get("toolname", "").strip() and "tooldescription" in a:
            action = a.get("action")
            target = urljoin(self.base, action) if action else None
            self.tools.append(Tool(a["toolname"].strip(), a["tooldescription"].strip(),
                                   "webmcp-form", (a.get("method") or "get").lower()[:10],
                                   target[:2048] if target else None))
        elif tag == "tool" and a.get("name", "").strip() and "description" in a:
            self.tools.append(Tool(a["name"].strip(), a["description"].strip(), "voix", "",
                                   None))


def declared_tools(body: bytes, base: str) -> PageTools:
    """The declarative tools in (the first 512 KiB of) a page. Never raises."""
    text = body[:MAX_PAGE].decode("utf-8", "replace")
    finder = _ToolFinder(base)
    # Only up to the last ">": no start tag ends without one (html.parser reads an unclosed
    # tag as text), and a page of unclosed tags made it rescan the rest of the page at each
    # "<" (quadratic: minutes of CPU for 512 KiB of "<form a" without a ">").
    markup = text[:text.rfind(">") + 1]
    # html.parser on hostile markup: keep what was found before it broke
    with contextlib.suppress(Exception):
        finder.feed(markup)
        finder.close()
    return PageTools(tuple(finder.tools), "modelcontext" in text.lower(),
                     len(body) > MAX_PAGE)


@dataclass(frozen=True, slots=True)
class Robots:
    """The groups of a robots.txt: each group's agents and its (allow, path) rules."""

    groups: tuple[tuple[tuple[str, ...], tuple[tuple[bool, str], ...]], ...]

    def allows(self, path: str, agent: str = "*") -> bool:
        """RFC 9309: the group naming ``agent`` (else ``*``); the longest matching rule
        wins, allow on a tie; no rule, allowed."""
        wanted = agent.lower()
        rules: list[tuple[bool, str]] = []
        for agents, group in self.groups:
            if wanted != "*" and wanted in agents:
                rules.extend(group)
        if not rules:
            for agents, group in self.groups:
                if "*" in agents:
                    rules.extend(group)
        best: tuple[int, bool] = (-1, True)
        for allow, pattern in rules:
            length = _robots_match(pattern, path)
            if length is not None and (length > best[0] or (length == best[0] and allow)):
                best = (length, allow)
        return best[1]

    def to_json(self) -> dict[str, Any]:
        return {"userAgents": sorted({a for agents, _ in self.groups for a in agents})[:50],
                "rules": sum(len(g) for _, g in self.groups),
                "frontPageOpenToAll": self.allows("/")}


def _robots_match(pattern: str, path: str) -> int | None:
    """The length of ``pattern`` when it matches ``path`` (``*`` and a final ``$``)."""
    if not pattern:
        return None
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(part) for part in body.split("*")[:32])
    if re.match(regex + ("$" if anchored else ""), path) is None:
        return None
    return len(pattern)


def parse_robots(body: bytes) -> Robots:
    """A robots.txt as groups (RFC 9309). Lenient as the RFC asks: unknown lines are
    skipped, a BOM is dropped, at most 512 KiB and 10,000 lines are read. Never raises."""
    text = body[:MAX_ROBOTS].decode("utf-8", "replace").lstrip("\ufeff")
    groups: list[tuple[list[str], list[tuple[bool, str]]]] = []
    agents: list[str] = []
    rules: list[tuple[bool, str]] = []
    for line in text.splitlines()[:MAX_ROBOTS_LINES]:
        name, sep, value = line.split("#", 1)[0].partition(":")
        if not sep:
            continue
        name, value = name.strip().lower(), value.strip()[:512]
        if name == "user-agent":
            if rules:  # a user-agent after rules starts a new group
                groups.append((agents, rules))
                agents, rules = [], []
            if value:
                agents.append(value.lower())
        elif name in ("allow", "disallow") and agents and value:  # empty: matches nothing
            rules.append((name == "allow", value))
    if agents:
        groups.append((agents, rules))
    return Robots(tuple((tuple(a), tuple(r)) for a, r in groups))


def plausible(status: int, content_type: str, body: bytes, shape: str,
              catch_all: bytes | None) -> bool:
    """A 200 that looks like the artifact asked for (``json``: parses as a JSON object or
    array; ``text``: not HTML) and is not the page a catch-all server answers everything
    with."""
    if status != 200 or (catch_all is not None and body == catch_all):
        return False
    if shape == "json":
        from muretai_cli.seam import parse_document

        try:
            return isinstance(parse_document(body), dict | list)
        except InputError:
            return False
    return "text/html" not in content_type.lower()
