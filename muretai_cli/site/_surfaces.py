"""The site check's later checks: the card's terms and the door's, the front page's
signpost, a catch-all server, and the facts (MCP, skills index, markdown, Permissions-Policy,
declarative WebMCP tools), which are reported and never judged.

Each reads what ``_check`` recorded on the visit and adds its finding; the parsers are the
visitor's own (``visit/signposts.py``), so a probe and a site check read a site alike.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from muretai_cli.net import HttpResult
    from muretai_cli.site._check import _Visit

SIX = ("contextId", "from", "messageId", "text", "timestamp", "to")
AGENT_SKILLS_PATH = "/.well-known/agent-skills/index.json"
MCP_PATHS = ("/.well-known/mcp.json", "/.well-known/mcp/server-card.json")
_TOOLS_POLICY = re.compile(r"(?:^|[^a-z0-9-])tools\s*=")


def card_terms(card: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The scheme name and terms object a card publishes under ``securitySchemes`` (the
    scheme's ``agentEntry`` object, or the scheme itself when it carries the recipe)."""
    schemes = card.get("securitySchemes")
    if not isinstance(schemes, dict):
        return None
    for name, scheme in list(schemes.items())[:16]:
        if not isinstance(scheme, dict):
            continue
        inner = scheme.get("agentEntry")
        if isinstance(inner, dict):
            return str(name), inner
        if "recipient" in scheme or "signedFields" in scheme:
            return str(name), scheme
    return None


def check_terms(v: _Visit) -> None:
    found = card_terms(v.card or {})
    if found is None:
        v.add("terms", "WARN", "the card states no terms (no securitySchemes entry with the "
                               "recipe): a visitor learns how to sign only by being refused")
        return
    name, terms = found
    problems = []
    recipient = terms.get("recipient")
    if recipient != v.did:
        problems.append(f"the terms name {str(recipient)[:120]!r} as recipient, the card "
                        f"names {v.did}: a message signed to the terms goes to another DID")
    if terms.get("signedFields") != list(SIX):
        problems.append("signedFields is not exactly the six fields "
                        f"({', '.join(SIX)})")
    if problems:
        v.add("terms", "FAIL", "; ".join(problems), scheme=name,
              recipient=recipient if isinstance(recipient, str) else None)
        return
    v.add("terms", "PASS", f"scheme {name}: recipient is the card's DID, the six fields",
          scheme=name)


def check_door_terms(v: _Visit) -> None:
    from muretai_cli.seam import canonical_bytes

    terms = v.findings.get("terms")
    if terms is None or terms.status != "PASS":
        v.add("door-terms", "INFO", "not judged: the card's terms are not usable (above)")
        return
    if not isinstance(v.door_accepts, dict):
        v.add("door-terms", "INFO", "not judged: the door did not teach its terms")
        return
    if v.door_did != v.did:
        v.add("door-terms", "INFO", "not judged: the door answers for another DID than the "
                                    "card (see origin)")
        return
    found = card_terms(v.card or {})
    published = found[1] if found else {}
    taught = v.door_accepts
    if canonical_bytes(taught) == canonical_bytes(published):
        v.add("door-terms", "PASS", "data.accepts[0] is the card's terms object, verbatim")
        return
    keys = sorted(k for k in set(taught) | set(published) if taught.get(k) != published.get(k))
    v.add("door-terms", "FAIL", "the door's refusal teaches other terms than the card "
                                "publishes; these members differ: " + ", ".join(keys[:12]),
          differ=keys[:12])


def check_front(v: _Visit) -> None:
    """The front page (the base's own address) once as HTML, the checks that read it, the
    catch-all probe, and the facts."""
    front = v.fetch(v.endpoint, accept="text/html,*/*;q=0.8")
    _check_signpost(v, front)
    catch_all = _check_catch_all(v)
    _mcp(v, catch_all)
    _skills(v, catch_all)
    _markdown(v)
    _permissions_policy(v, front)
    _webmcp(v, front)


def _check_signpost(v: _Visit, front: HttpResult | None) -> None:
    from urllib.parse import urljoin

    from muretai_cli.urls import AGENT_ENTRY_REL, CARD_PATH
    from muretai_cli.visit.signposts import links_to, parse_links

    if front is None:
        v.add("signpost", "INFO", f"not judged: {v.endpoint} could not be fetched")
        return
    field = front.headers.get("link")
    links = parse_links(field)
    card_url = v.base.join(CARD_PATH)
    desc = [urljoin(front.url, h) for h in links_to(links, "service-desc")]
    door = [urljoin(front.url, h) for h in links_to(links, AGENT_ENTRY_REL)]
    facts = {"url": v.endpoint, "status": front.status, "link": (field or "")[:500] or None,
             "serviceDesc": desc[:8], "agentEntry": door[:8]}
    if v.card is not None and card_url not in desc + door:
        how = "no Link header" if not field else (
            "Link names neither service-desc nor the agent-entry relation" if not desc + door
            else "Link points elsewhere than this site's card")
        v.add("signpost", "WARN", f"{v.endpoint}: {how} (the card is {card_url})", **facts)
    elif v.card is None:
        v.add("signpost", "INFO", f"{v.endpoint}: Link {'present' if links else 'absent'} "
                                  "(no card to point at)", **facts)
    else:
        v.add("signpost", "PASS", "the front page points at the card (Link: service-desc)",
              **facts)


def _check_catch_all(v: _Visit) -> bytes | None:
    """A path nobody serves on purpose; a 200 there means a status proves nothing here.
    Returns that body, which a fact's body must differ from to count."""
    url = v.base.join(f"/.well-known/muretai-site-check-{secrets.token_hex(6)}")
    got = v.fetch(url, accept="*/*")
    if got is None or got.status != 200:
        status = got.status if got is not None else None
        v.add("catch-all", "PASS" if v.card is not None else "INFO",
              f"an unknown path answers HTTP {status}", url=url, status=status)
        return None
    v.add("catch-all", "WARN" if v.card is not None else "INFO",
          f"{url} answers 200 ({len(got.body)} bytes): this server answers every path, so a "
          "200 proves nothing here (facts below are compared with this body)",
          url=url, status=200)
    return got.body


def _fetched(v: _Visit, url: str, shape: str, catch_all: bytes | None,
             accept: str = "application/json") -> dict[str, Any]:
    from muretai_cli.visit.signposts import plausible

    got = v.fetch(url, accept=accept)
    if got is None:
        return {"url": url, "status": None, "present": False}
    present = plausible(got.status, got.headers.get("content-type", ""), got.body, shape,
                        catch_all)
    return {"url": url, "status": got.status, "present": present,
            "_body": got.body if present else b""}


def _mcp(v: _Visit, catch_all: bytes | None) -> None:
    from muretai_cli.errors import InputError
    from muretai_cli.urls import origin_of
    from muretai_cli.visit.signposts import parse_mcp_card

    rows = []
    for path in MCP_PATHS:
        row = _fetched(v, v.base.origin + path, "json", catch_all)
        body = row.pop("_body", b"")
        if row["present"]:
            try:
                mcp = parse_mcp_card(body)
            except InputError as exc:
                row["reason"] = exc.code
            else:
                row.update(mcp.to_json())
                row["onOrigin"] = all(origin_of(e) == v.base.origin for e in mcp.endpoints)
        rows.append(row)
    said = "; ".join(f"{r['url']}: " + (r.get("reason", "present") if r["present"]
                                        else f"HTTP {r['status']}") for r in rows)
    v.add("mcp", "INFO", said, documents=rows)


def _skills(v: _Visit, catch_all: bytes | None) -> None:
    from muretai_cli.seam import parse_document

    row = _fetched(v, v.base.origin + AGENT_SKILLS_PATH, "json", catch_all)
    body = row.pop("_body", b"")
    if row["present"]:
        doc = parse_document(body)
        skills = doc.get("skills") if isinstance(doc, dict) else doc
        row["skills"] = len(skills) if isinstance(skills, list) else None
    v.add("agent-skills", "INFO", f"{row['url']}: " + (
        "present" if row["present"] else f"not published (HTTP {row['status']})"), **row)


def _markdown(v: _Visit) -> None:
    got = v.fetch(v.endpoint, accept="text/markdown")
    kind = got.headers.get("content-type", "") if got is not None else ""
    served = got is not None and got.status == 200 and "text/markdown" in kind.lower()
    v.add("markdown", "INFO", f"Accept: text/markdown on {v.endpoint} -> "
                              f"{kind[:80] or 'no content-type'}"
          f"{'' if served else ' (not served)'}", url=v.endpoint, served=served,
          status=got.status if got is not None else None,
          vary=got.headers.get("vary", "")[:200] if got is not None else None)


def _permissions_policy(v: _Visit, front: HttpResult | None) -> None:
    policy = front.headers.get("permissions-policy", "") if front is not None else ""
    tools = _TOOLS_POLICY.search(policy.lower()) is not None
    v.add("permissions-policy", "INFO", f"Permissions-Policy {'names tools' if tools else ''}"
          f"{'' if tools else 'does not name tools'}"
          + (f": {policy[:200]}" if policy else " (no header)"),
          tools=tools, header=policy[:500] or None)


def _webmcp(v: _Visit, front: HttpResult | None) -> None:
    from muretai_cli.visit.signposts import (
        TOOL_DESCRIPTION_BUDGET,
        TOOL_NAME_BUDGET,
        declared_tools,
    )

    if front is None or front.status != 200:
        v.add("webmcp", "INFO", "not read: the front page was not fetched")
        return
    page = declared_tools(front.body, front.url)
    over = [f"{t.name[:40]}: {', '.join(t.over)}" for t in page.tools if t.over]
    detail = f"{len(page.tools)} declarative tool(s)"
    if page.tools:
        detail += " (" + ", ".join(t.name[:40] for t in page.tools[:8]) + ")"
    if over:
        detail += f"; over the budgets ({TOOL_NAME_BUDGET} / {TOOL_DESCRIPTION_BUDGET} " \
                  "characters): " + "; ".join(over[:8])
    if page.imperative_hint:
        detail += "; the page mentions modelContext (tools registered at run time are seen " \
                  "only by a browser)"
    v.add("webmcp", "INFO", detail, tools=[t.to_json() for t in page.tools[:50]],
          overBudget=over[:50], imperativeHint=page.imperative_hint,
          nameBudget=TOOL_NAME_BUDGET, descriptionBudget=TOOL_DESCRIPTION_BUDGET)
