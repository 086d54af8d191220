"""What a door publishes besides its terms: the notice at its address, the card's interface
list, the owner's declared order of ways in, and the owner's own skills.

    notice              the short text a GET of the door's address answers, and its headers
    supported_interfaces  the card's ``supportedInterfaces`` (where to POST, which binding)
    parse_prefer        ``--prefer KIND[:WHEN]`` values → ``agentEntry.prefer`` (AE-30)
    load_skills         ``--skill FILE`` → validated A2A skills, or ``InputError`` naming why

Each value is checked when it is read: a door with a bad declaration refuses to start
rather than publish a corrected or partial one (agent-entry AE-30).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from muretai_cli.errors import InputError
from muretai_cli.urls import AGENT_ENTRY_REL

__all__ = ["AGENT_ENTRY_REL", "link_value", "load_skills", "notice", "parse_prefer",
           "supported_interfaces"]
PREFER_KINDS = ("page", "card", "mcp")
PREFER_WHEN = ("person", "alone", "key", "no-key", "token", "browser")
MAX_PREFER = 12
MAX_SKILLS = 32
MAX_SKILL_FILE = 256 * 1024
_SKILL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SKILL_TEXT = {"id": 64, "name": 200, "description": 2000}
_SKILL_LISTS = {"tags": 200, "examples": 2000, "inputModes": 200, "outputModes": 200}
_RESERVED_SKILLS = frozenset({"dm"})  # the door's own skill


def supported_interfaces(endpoint: str, protocol_version: str) -> list[dict[str, str]]:
    """Where a reader of A2A 1.0 finds the door: the POST address, JSON-RPC, the version."""
    return [{"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": protocol_version}]


def link_value(card_url: str) -> str:
    """The ``Link`` field of the notice: the card as service description and as the door."""
    return f'<{card_url}>; rel="service-desc", <{card_url}>; rel="{AGENT_ENTRY_REL}"'


def notice(name: str, did: str, card_url: str, endpoint: str
           ) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
    """The body and headers of a GET of the door's own address: a person reads who answers
    here, an agent finds the card in the ``Link`` header without parsing anything."""
    body = (f"{name}\n\nThis address is a muretai door: an agent can reach it with one signed "
            f"message.\nDID:   {did}\nCard:  {card_url}\nPOST a signed A2A message/send "
            f"to {endpoint} for a signed reply.\n").encode()
    headers = ((b"content-type", b"text/plain; charset=utf-8"),
               (b"link", link_value(card_url).encode()),
               (b"access-control-allow-origin", b"*"),
               (b"cache-control", b"no-store"))
    return body, headers


def parse_prefer(values: list[str] | tuple[str, ...]) -> tuple[str | dict[str, str], ...]:
    """``card``, ``page:no-key`` … as the card's ``agentEntry.prefer`` entries, in order.

    A kind alone is a bare string; ``KIND:WHEN`` is ``{"kind", "when"}``. Anything else is
    ``InputError("bad-prefer")``: the order is published as declared or not at all."""
    if len(values) > MAX_PREFER:
        raise InputError("bad-prefer", f"--prefer is given {len(values)} times; at most "
                                       f"{MAX_PREFER} entries are published")
    out: list[str | dict[str, str]] = []
    for value in values:
        kind, sep, when = value.strip().partition(":")
        if kind not in PREFER_KINDS:
            raise InputError("bad-prefer", f"--prefer {value[:40]!r}: {kind[:20]!r} is not a "
                                           "way in", hint="a kind is page, card or mcp, "
                                                          "optionally :WHEN (AE-30)")
        if not sep:
            out.append(kind)
            continue
        if when not in PREFER_WHEN:
            raise InputError("bad-prefer", f"--prefer {value[:40]!r}: {when[:20]!r} is not a "
                                           "condition",
                             hint="WHEN is one of " + ", ".join(PREFER_WHEN) + " (AE-30)")
        out.append({"kind": kind, "when": when})
    return tuple(out)


def load_skills(paths: list[Path] | tuple[Path, ...]) -> tuple[dict[str, Any], ...]:
    """The skills in each file (one A2A skill object, or an array of them), validated.

    ``InputError("bad-skill")`` names the file, the skill and the member that broke; an id
    used twice, or the door's own ``dm``, is refused too."""
    from muretai_cli.seam import parse_document

    skills: list[dict[str, Any]] = []
    for path in paths:
        try:
            with path.open("rb") as fh:
                raw = fh.read(MAX_SKILL_FILE + 1)
        except OSError as exc:
            raise InputError("unreadable-skill", f"--skill {path}: {exc.strerror}") from None
        if len(raw) > MAX_SKILL_FILE:
            raise InputError("bad-skill", f"--skill {path}: more than {MAX_SKILL_FILE} bytes")
        try:
            doc = parse_document(raw)
        except InputError as exc:
            raise InputError("bad-skill", f"--skill {path}: {exc.code}: {exc.detail}") from None
        items = doc if isinstance(doc, list) else [doc]
        for index, item in enumerate(items):
            skills.append(_skill(item, f"--skill {path}" + (f"[{index}]"
                                                             if isinstance(doc, list) else "")))
    if len(skills) > MAX_SKILLS:
        raise InputError("bad-skill", f"{len(skills)} skills; a card publishes at most "
                                      f"{MAX_SKILLS}")
    seen: set[str] = set(_RESERVED_SKILLS)
    for skill in skills:
        if skill["id"] in seen:
            raise InputError("bad-skill", f"skill id {skill['id']!r} is used twice (or is the "
                                          "door's own dm skill)")
        seen.add(skill["id"])
    return tuple(skills)


def _skill(item: object, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise InputError("bad-skill", f"{where}: a skill is a JSON object")
    unknown = sorted(set(item) - set(_SKILL_TEXT) - set(_SKILL_LISTS))
    if unknown:
        raise InputError("bad-skill", f"{where}: unknown member {unknown[0][:40]!r}",
                         hint="a skill has id, name, description, tags and optionally "
                              "examples, inputModes, outputModes (A2A AgentSkill)")
    for key, limit in _SKILL_TEXT.items():
        value = item.get(key)
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            raise InputError("bad-skill", f"{where}: {key} must be a non-empty string of at "
                                          f"most {limit} characters")
    if _SKILL_ID.fullmatch(item["id"]) is None:
        raise InputError("bad-skill", f"{where}: id {item['id'][:40]!r} is not letters, digits, "
                                      "'.', '_' or '-'")
    for key, limit in _SKILL_LISTS.items():
        if key not in item and key != "tags":
            continue
        value = item.get(key)
        if not isinstance(value, list) or len(value) > 32 or not all(
                isinstance(v, str) and v.strip() and len(v) <= limit for v in value):
            raise InputError("bad-skill", f"{where}: {key} must be a list of at most 32 "
                                          f"non-empty strings of at most {limit} characters")
    if any(ch < " " and ch not in "\n\t" for v in item.values() for s in
           (v if isinstance(v, list) else [v]) for ch in s):
        raise InputError("bad-skill", f"{where}: a control character in a skill's text")
    return dict(item)
