"""A visitor's probe: which way into this site, given what I hold?

    probe       one base URL and what is on hand → ``ProbeReport`` (GET only, one deadline)
    OnHand      what the visitor holds: a key, a token, a browser, a person in the tab
    Way         one way in, routed (with why) or excluded (with a named reason)
    ProbeReport every way in exactly one of ``routes`` and ``excluded``, and the signposts

The ways are the Agent Card (``card``), an MCP server card (``mcp``) and a page declaring
tools (``page``); signposts (robots.txt, llms.txt, markdown, the front page's ``Link``) are
reported and never become a route. The rules are agent-web-router v0's (AWR-n, named on each
reason): a card served from elsewhere, naming another origin or failing its signature is
excluded; an MCP server needs a token unless it says it needs none, and must be on this
origin; a page needs a person or a browser, and robots.txt closing it shuts out a headless
visit. The site's own order (``agentEntry.prefer``, from a card that was not excluded) only
re-orders what the rules allow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import DeadlineExceeded, InputError, MuretaiError, Refused, Unreachable
from muretai_cli.urls import CARD_PATH, CARD_SIG_PATH, LEGACY_CARD_PATH, origin_of

if TYPE_CHECKING:
    from muretai_cli.net import HttpResult, SafeClient
    from muretai_cli.urls import BaseUrl

KINDS = ("card", "mcp", "page")
MCP_PATH = "/.well-known/mcp.json"
MAX_PREFER = 12
_WHEN = ("person", "alone", "key", "no-key", "token", "browser")


@dataclass(frozen=True, slots=True)
class OnHand:
    """What the visitor says it holds (the probe takes nothing of this from the site)."""

    key: bool = False
    token: bool = False
    browser: bool = False
    person: bool = False

    def holds(self, when: str) -> bool:
        return {"person": self.person, "alone": not self.person, "key": self.key,
                "no-key": not self.key, "token": self.token, "browser": self.browser}[when]

    def to_json(self) -> dict[str, bool]:
        return {"key": self.key, "token": self.token, "browser": self.browser,
                "person": self.person}


@dataclass(frozen=True, slots=True)
class Way:
    """One way in. Routed: ``code`` is ``routed``; excluded: ``code`` names the reason."""

    kind: str
    routed: bool
    code: str
    message: str
    facts: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.routed:
            out["why"] = self.message
        else:
            out["reason"] = {"code": self.code, "message": self.message}
        if self.facts:
            out["facts"] = self.facts
        return out


@dataclass(frozen=True, slots=True)
class ProbeReport:
    url: str
    on_hand: OnHand
    routes: tuple[Way, ...]
    excluded: tuple[Way, ...]
    order: str  # "default" | "site"
    signposts: dict[str, Any]
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return bool(self.routes)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "url": self.url, "onHand": self.on_hand.to_json(),
                "order": self.order, "routes": [w.to_json() for w in self.routes],
                "excluded": [w.to_json() for w in self.excluded],
                "signposts": self.signposts, "notes": list(self.notes)}


class _Visit:
    """The probe's GETs: each answer, or the named reason it has none (never raised)."""

    def __init__(self, base: BaseUrl, client: SafeClient) -> None:
        self.base = base
        self.client = client
        self.notes: list[str] = []
        self.answered = 0

    @property
    def front(self) -> str:
        return self.base.text if self.base.path else self.base.origin + "/"

    def get(self, url: str, accept: str = "application/json"
            ) -> tuple[HttpResult | None, str | None]:
        try:
            result = self.client.get(url, accept=accept)
        except DeadlineExceeded:
            self.notes.append(f"not reached before the deadline: GET {url}")
            return None, "deadline"
        except (Refused, Unreachable, InputError) as exc:
            if exc.code != "unreachable":
                self.answered += 1
            return None, exc.code
        self.answered += 1
        return result, None


def _absent(kind: str, what: str, result: HttpResult | None, error: str | None,
            rule: str) -> Way:
    if error == "cross-origin-redirect":
        return Way(kind, False, f"{kind}-redirected", f"{what} redirected to another origin: "
                                                      f"a substitution, ignored ({rule})")
    if error is not None:
        return Way(kind, False, f"{kind}-unfetched", f"{what} could not be fetched ({error})")
    status = result.status if result is not None else None
    return Way(kind, False, f"no-{kind}", f"{what} is not published (HTTP {status})",
               {"status": status})


def _card_way(v: _Visit, on_hand: OnHand) -> tuple[Way, dict[str, Any] | None]:
    from muretai_cli.seam import canonical_bytes, parse_document, verify_card_envelope

    url = v.base.join(CARD_PATH)
    result, error = v.get(url)
    if error is None and result is not None and result.status in (404, 410):
        url = v.base.join(LEGACY_CARD_PATH)  # AWR-2: the legacy path may stand in
        result, error = v.get(url)
    if error is not None or result is None or result.status != 200:
        return _absent("card", f"the Agent Card ({url})", result, error, "AWR-4"), None
    try:
        card = parse_document(result.body)
    except InputError as exc:
        return Way("card", False, "malformed-card", f"{url}: {exc.code}: {exc.detail}"), None
    did = card.get("did") if isinstance(card, dict) else None
    if not isinstance(card, dict) or not isinstance(did, str):
        return Way("card", False, "card-names-no-did", f"{url} names no did: a reply could "
                                                       "not be verified"), None
    facts: dict[str, Any] = {"url": url, "did": did[:200]}
    if origin_of(str(card.get("url", ""))) != v.base.origin:
        return Way("card", False, "card-other-origin",
                   f"the card's url {str(card.get('url'))[:200]!r} is not {v.base.origin}: "
                   "its door is not this site's (AWR-5)", facts), None
    sig, sig_error = v.get(v.base.join(CARD_SIG_PATH))
    if sig_error is None and sig is not None and sig.status == 200:
        try:
            signed = verify_card_envelope(parse_document(sig.body), expected_did=did)
        except MuretaiError as exc:
            return Way("card", False, "card-signature-refused",
                       f"the signed envelope is refused ({exc.code}): a present signature "
                       "that fails is a substitution, never 'unsigned' (AWR-6)", facts), None
        if canonical_bytes(signed) != canonical_bytes(card):
            return Way("card", False, "card-signature-other-card",
                       "the envelope verifies but signs another card than the one served "
                       "(AWR-6)", facts), None
        facts["signed"] = True
    elif sig_error not in (None, "deadline", "unreachable"):
        return Way("card", False, "card-signature-refused",
                   f"the signed envelope could not be read ({sig_error}) (AWR-6)", facts), None
    else:
        facts["signed"] = False
        v.notes.append("the card is not signed: only the door's signed reply will prove its "
                       "key (AWR-7)")
    door = _door_endpoint(card)
    facts["door"] = door[:2048] if door else None
    if door is None or origin_of(door) != v.base.origin:
        return Way("card", False, "door-other-origin",
                   f"the door the card names ({str(door)[:200]}) is not on {v.base.origin} "
                   "(AWR-23)", facts), None
    skills = card.get("skills")
    facts["skills"] = len(skills) if isinstance(skills, list) else 0
    why = "the door answers one signed message; your key is all it needs" if on_hand.key \
        else "the door answers one signed message; make a key first (the card's terms say " \
             "how; `muretai id new`)"
    return Way("card", True, "routed", why, facts), card


def _door_endpoint(card: dict[str, Any]) -> str | None:
    interfaces = card.get("supportedInterfaces")
    if isinstance(interfaces, list) and interfaces and isinstance(interfaces[0], dict) \
            and isinstance(interfaces[0].get("url"), str):
        return str(interfaces[0]["url"])
    url = card.get("url")
    return url if isinstance(url, str) else None


def _mcp_way(v: _Visit, on_hand: OnHand) -> Way:
    from muretai_cli.visit.signposts import parse_mcp_card

    url = v.base.origin + MCP_PATH
    result, error = v.get(url)
    if error is not None or result is None or result.status != 200:
        return _absent("mcp", f"the MCP server card ({url})", result, error, "AWR-10a")
    try:
        mcp = parse_mcp_card(result.body)
    except InputError as exc:
        return Way("mcp", False, exc.code, f"{url}: {exc.detail}")
    facts = mcp.to_json()
    elsewhere = [e for e in mcp.endpoints if origin_of(e) != v.base.origin]
    if elsewhere:
        return Way("mcp", False, "mcp-other-origin",
                   f"the server card names an endpoint off this origin ({elsewhere[0][:200]}): "
                   "not this site's server (AWR-10a)", facts)
    if not on_hand.token and not mcp.open:
        return Way("mcp", False, "mcp-needs-token", "the MCP server needs a credential and "
                                                    "you hold no token (AWR-10)", facts)
    why = "you hold a token for the site's MCP server" if on_hand.token \
        else "the MCP server card says no credential is needed"
    return Way("mcp", True, "routed", why, facts)


def _page_way(v: _Visit, on_hand: OnHand, robots: Any) -> tuple[Way, HttpResult | None]:
    from muretai_cli.visit.signposts import declared_tools

    result, error = v.get(v.front, accept="text/html,*/*;q=0.8")
    if error is not None or result is None or result.status != 200:
        return _absent("page", f"the front page ({v.front})", result, error, "AWR-4"), result
    page = declared_tools(result.body, result.url)
    facts: dict[str, Any] = {"tools": [t.to_json() for t in page.tools[:50]],
                             "imperativeHint": page.imperative_hint}
    if not page.tools and not page.imperative_hint:
        return Way("page", False, "page-no-tools", "the page declares no tools", facts), result
    tools = f"{len(page.tools)} declarative tool(s)" + (
        " and a modelContext hint" if page.imperative_hint else "")
    if not on_hand.person and not on_hand.browser:
        return Way("page", False, "page-needs-browser",
                   f"the page has {tools}, but no person is in the tab and you carry no "
                   "browser (AWR-11)", facts), result
    path = v.base.path or "/"
    if not on_hand.person and robots is not None and not robots.allows(path, "muretai"):
        return Way("page", False, "robots-disallow",
                   f"robots.txt closes {path} to crawlers, and a headless visit is one "
                   "(AWR-11a)", facts), result
    why = (f"a person is in the tab: the page's {tools} run in their session" if on_hand.person
           else f"you carry a browser: the page's {tools} run in it")
    return Way("page", True, "routed", why, facts), result


def _robots(v: _Visit) -> tuple[Any, dict[str, Any]]:
    from muretai_cli.visit.signposts import parse_robots

    url = v.base.origin + "/robots.txt"
    result, error = v.get(url, accept="text/plain")
    if result is None or result.status != 200 \
            or "text/html" in result.headers.get("content-type", ""):
        return None, {"url": url, "status": result.status if result else None,
                      "error": error}
    robots = parse_robots(result.body)
    return robots, {"url": url, "status": 200, **robots.to_json()}


def _signposts(v: _Visit, front: HttpResult | None, robots: dict[str, Any]
               ) -> dict[str, Any]:
    from muretai_cli.visit.signposts import parse_links, plausible

    out: dict[str, Any] = {"robotsTxt": robots}
    for name, path in (("llmsTxt", "/llms.txt"), ("llmsFullTxt", "/llms-full.txt")):
        url = v.base.origin + path
        got, error = v.get(url, accept="text/plain")
        out[name] = {"url": url, "status": got.status if got else None, "error": error,
                     "present": got is not None and plausible(
                         got.status, got.headers.get("content-type", ""), got.body, "text",
                         None)}
    md, error = v.get(v.front, accept="text/markdown")
    out["markdown"] = {"url": v.front, "served": md is not None and md.status == 200 and
                       "text/markdown" in md.headers.get("content-type", "").lower()}
    link = front.headers.get("link") if front is not None else None
    out["link"] = {"field": (link or "")[:500] or None,
                   "links": [x.to_json() for x in parse_links(link)][:16]}
    return out


def _order(routed: dict[str, Way], on_hand: OnHand, card: dict[str, Any] | None
           ) -> tuple[list[Way], str]:
    """The site's declared entries whose condition holds (AWR-17), then the router's own
    order (AWR-8, AWR-9); only routed ways are placed, unknown entries dropped (AWR-18/19)."""
    placed: list[str] = []
    declared = None
    if card is not None and "card" in routed:  # a card excluded under §4 declares nothing
        section = card.get("agentEntry")
        declared = section.get("prefer") if isinstance(section, dict) else None
    if isinstance(declared, list):
        for entry in declared[:MAX_PREFER]:
            kind, when = (entry, None) if isinstance(entry, str) else (
                (entry.get("kind"), entry.get("when")) if isinstance(entry, dict)
                else (None, None))
            if kind not in KINDS or (when is not None and when not in _WHEN):
                continue
            if (when is None or on_hand.holds(str(when))) and kind in routed \
                    and kind not in placed:
                placed.append(str(kind))
    site = bool(placed)
    default = ("page", "card", "mcp") if on_hand.person else ("card", "mcp", "page")
    placed += [k for k in default if k in routed and k not in placed]
    return [routed[k] for k in placed], "site" if site else "default"


def probe(base: BaseUrl, *, client: SafeClient, on_hand: OnHand) -> ProbeReport:
    """Every way into ``base`` for a visitor holding ``on_hand``. GET only, under the
    client's one deadline; a step the deadline cuts is a note, not an error. Raises
    ``Unreachable`` only when nothing at all answered."""
    v = _Visit(base, client)
    card_way, card = _card_way(v, on_hand)
    mcp_way = _mcp_way(v, on_hand)
    robots, robots_facts = _robots(v)
    page_way, front = _page_way(v, on_hand, robots)
    if v.answered == 0:  # a probe of nothing: the network's fault, not the site's answer
        if v.notes:
            raise client.deadline_error(f"before anything at {base.text} answered")
        raise Unreachable("unreachable", f"nothing answered at {base.text}",
                          data=client.report())
    signposts = _signposts(v, front, robots_facts)
    ways = (card_way, mcp_way, page_way)
    routes, order = _order({w.kind: w for w in ways if w.routed}, on_hand, card)
    excluded = tuple(w for w in ways if not w.routed)
    return ProbeReport(base.text, on_hand, tuple(routes), excluded, order, signposts,
                       tuple(v.notes))
