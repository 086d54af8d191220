"""The site check: follow a site to its Agent Card and say, check by check, what can be proven.

Presence is not proof. A card is a claim; a signature that verifies under the key the card
names, from a key bound to this origin, re-signed within six hours, is a fact. Each check
below judges one thing, so a site that breaks one thing turns exactly one check red. Every
fetch goes through the package's safe client (deadline, byte cap, same-origin redirects).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import DeadlineExceeded, InputError, MuretaiError, Refused, Unreachable
from muretai_cli.inbox.ladder import Code
from muretai_cli.site._linkage import domain_linkage, domain_of
from muretai_cli.site._remedies import REMEDIES
from muretai_cli.site._report import Finding, SiteReport, Status
from muretai_cli.urls import CARD_PATH, CARD_SIG_PATH, LEGACY_CARD_PATH, BaseUrl

if TYPE_CHECKING:
    from muretai_cli.home import PinStore
    from muretai_cli.net import HttpResult, SafeClient
    from muretai_cli.seam import SigningKey

TITLES = {
    "card": "Agent Card at /.well-known/agent-card.json",
    "card-alias": "agent.json alias",
    "signature": "signed envelope verifies under the card's DID",
    "origin": "the DID is bound to this origin",
    "fresh": "the envelope is fresh (at most 6 h old)",
    "pin": "the DID pinned for this origin",
    "door": "the door answers an unsigned knock",
    "door-signed": "a signed knock gets a signed reply",
    "cors": "OPTIONS and CORS on the card and the door",
    "terms": "the card states its terms, for its own DID",
    "door-terms": "the door teaches the terms the card publishes",
    "signpost": "the front page's Link: service-desc signpost",
    "catch-all": "unknown paths answer 404 (no catch-all)",
    "mcp": "MCP discovery (/.well-known/mcp.json, MCP server card)",
    "agent-skills": "agent skills index",
    "markdown": "markdown negotiation on the front page",
    "permissions-policy": "Permissions-Policy: tools",
    "webmcp": "declarative WebMCP tools on the front page",
    "wba-directory": "Web Bot Auth key directory",
    "did-configuration": "did-configuration.json (domain linkage)",
    "llms-txt": "llms.txt",
    "robots-txt": "robots.txt rules for agents",
}
ORDER = tuple(TITLES)
KNOCK_TEXT = "muretai site check: a knock"
_RPC_NO_ENVELOPE = Code.SIGNATURE


@dataclass
class _Visit:
    """What the checks learn as they go (each check reads what earlier ones recorded)."""

    base: BaseUrl
    client: SafeClient
    now: int
    card: dict[str, Any] | None = None
    card_bytes: bytes = b""
    envelope_ts: int | None = None
    door_did: str | None = None
    door_reached: bool = False
    door_accepts: object = None  # the first entry of the teaching refusal's accepts
    linkage: dict[str, Any] = field(default_factory=lambda: {"state": "not-published"})
    findings: dict[str, Finding] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return self.base.text if self.base.path else self.base.origin + "/"

    @property
    def did(self) -> str | None:
        did = self.card.get("did") if self.card else None
        return did if isinstance(did, str) else None

    def add(self, check: str, verdict: Status, detail: str, /, **facts: Any) -> None:
        remedy = REMEDIES[check] if verdict in ("FAIL", "WARN") else None
        self.findings[check] = Finding(check, TITLES[check], verdict, detail, facts, remedy)

    def get(self, path: str, accept: str = "application/json") -> HttpResult | None:
        """GET a path of this base; None when it cannot be fetched (the reason is the caller's
        to report: an absent thing is not an error)."""
        return self.fetch(self.base.join(path), accept=accept)

    def fetch(self, url: str, accept: str = "application/json") -> HttpResult | None:
        """GET a URL; None when it cannot be fetched (refused, unreachable, out of time, or
        redirected somewhere muretai does not dial)."""
        try:
            return self.client.get(url, accept=accept)
        except (Refused, Unreachable, DeadlineExceeded, InputError):
            return None


def _json(raw: bytes) -> object:
    from muretai_cli.seam import parse_document

    try:
        return parse_document(raw)
    except MuretaiError:
        return None


def _check_card(v: _Visit) -> bool:
    from muretai_cli.net import http_refusal

    url = v.base.join(CARD_PATH)
    try:
        result = v.client.get(url)  # unreachable here is the whole site: let it raise (3)
    except (Refused, InputError) as exc:  # a redirect elsewhere, too large: a finding
        v.add("card", "FAIL", f"{url}: {exc.code}: {exc.detail}", url=url, reason=exc.code)
        return False
    if result.status in (404, 410):
        v.add("card", "INFO", f"no card at {url} (HTTP {result.status}); publishing none is "
                              "not a fault, and nothing else about agents can be proven here",
              url=url, status=result.status)
        return False
    if http_refusal(result) is not None:
        v.add("card", "FAIL", f"{url} answered HTTP {result.status}", url=url,
              status=result.status)
        return False
    doc = _json(result.body)
    if not isinstance(doc, dict) or not isinstance(doc.get("did"), str):
        v.add("card", "FAIL", f"{url} is not a JSON object naming a did", url=url,
              status=result.status)
        return False
    v.card, v.card_bytes = doc, result.body
    v.add("card", "PASS", f"a card naming {doc['did']}", url=url, status=result.status,
          did=doc["did"], name=doc.get("name") if isinstance(doc.get("name"), str) else None)
    return True


def _check_alias(v: _Visit) -> None:
    from muretai_cli.seam import canonical_bytes

    url = v.base.join(LEGACY_CARD_PATH)
    result = v.get(LEGACY_CARD_PATH)
    if result is None or result.status != 200:
        status = result.status if result is not None else None
        v.add("card-alias", "INFO", "agent.json is not served (it is optional)", url=url,
              status=status)
        return
    if result.body == v.card_bytes:
        v.add("card-alias", "PASS", "the same bytes as agent-card.json", url=url, status=200)
        return
    doc, card = _json(result.body), v.card or {}
    if isinstance(doc, dict) and canonical_bytes(doc) == canonical_bytes(card):
        v.add("card-alias", "PASS", "the same card as agent-card.json (bytes differ only in "
                                    "spelling)", url=url, status=200)
        return
    if not isinstance(doc, dict):
        how = "it is not a JSON object"
    else:
        keys = sorted(k for k in set(doc) | set(card) if doc.get(k) != card.get(k))
        how = "these members differ: " + ", ".join(keys[:12])
    v.add("card-alias", "WARN", f"agent.json differs from agent-card.json ({how})", url=url,
          status=200)


def _check_signature(v: _Visit) -> None:
    from muretai_cli.seam import verify_served_card

    url = v.base.join(CARD_SIG_PATH)
    result = v.get(CARD_SIG_PATH)
    if result is None or result.status != 200:
        status = result.status if result is not None else None
        v.add("signature", "WARN", f"no signed envelope at {url} (HTTP {status}): the card is "
                                   "a claim nothing proves", url=url, status=status)
        return
    env = _json(result.body)
    try:
        signed = verify_served_card(env, v.card or {}, expected_did=str(v.did))
    except MuretaiError as exc:
        v.add("signature", "FAIL", f"the envelope is refused: {exc.code}: {exc.detail}",
              url=url, reason=exc.code)
        return
    v.envelope_ts = signed.ts
    v.add("signature", "PASS", f"verified under {v.did}", url=url, ts=v.envelope_ts)


def _did_configuration(v: _Visit) -> None:
    """Fetch and judge did-configuration.json for the card's DID (a fact for ``origin``)."""
    v.linkage = domain_linkage(v.base, str(v.did), client=v.client, now=v.now)
    state, url = v.linkage["state"], v.linkage["url"]
    if state == "not-published":
        how = v.linkage.get("status") or v.linkage.get("error")
        v.add("did-configuration", "INFO", f"not published ({how})", url=url)
    elif state == "not-bound":
        v.add("did-configuration", "INFO", f"published; it does not bind {v.did} to this "
                                           f"domain ({v.linkage['reason']})", url=url)
    else:
        v.add("did-configuration", "INFO", f"published; binds {v.did} to "
                                           f"{v.linkage['origin']} until {v.linkage['exp']}",
              url=url)


def _check_origin(v: _Visit) -> None:
    from muretai_cli.visit.card import canonical_base

    card = v.card or {}
    url = card.get("url")
    facts = {"cardUrl": url if isinstance(url, str) else None, "base": v.base.text,
             "domainLinkage": v.linkage["state"]}
    problems = []
    if not isinstance(url, str) or canonical_base(url) != v.base:
        problems.append(f"the card's url {str(url)[:200]!r} is not this site ({v.base.text}): "
                        "a card copied here from another site still verifies, and still names "
                        "the other site")
    if v.linkage["state"] == "not-bound":
        problems.append(f"did-configuration.json is published but does not bind {v.did} to "
                        f"this domain: {v.linkage['reason']}: {v.linkage['detail']}")
    if v.door_did is not None and v.door_did != v.did:
        problems.append(f"the door here answers for {v.door_did}, the card names {v.did}")
    if problems:
        v.add("origin", "FAIL", "; ".join(problems), **facts)
        return
    how = "the card's url is this origin"
    if v.linkage["state"] == "bound":
        how += ", and did-configuration.json binds the DID to this domain"
    v.add("origin", "PASS", how, **facts)


def _check_fresh(v: _Visit) -> None:
    from muretai_cli.seam import ENVELOPE_MAX_AGE, ENVELOPE_MAX_AHEAD, envelope_freshness

    ts = v.envelope_ts
    if ts is None:
        v.add("fresh", "INFO", "not judged: there is no verified envelope to date")
        return
    age = v.now - ts
    verdict = envelope_freshness(ts, v.now)
    if verdict == "stale":
        v.add("fresh", "WARN", f"signed {age // 3600} h {age % 3600 // 60} min ago (more than "
                               f"{ENVELOPE_MAX_AGE // 3600} h): nobody may be home", ts=ts,
              ageSeconds=age)
    elif verdict == "from-the-future":  # refused, as card fetch and verify card refuse it
        v.add("fresh", "FAIL", f"dated {-age} s in the future (more than "
                               f"{ENVELOPE_MAX_AHEAD} s): the signer's clock is wrong",
              ts=ts, ageSeconds=age, reason="envelope-from-the-future")
    else:
        v.add("fresh", "PASS", f"signed {age} s ago", ts=ts, ageSeconds=age)


def _check_pin(v: _Visit, pins: PinStore | None) -> None:
    pinned = pins.get(v.base.text) if pins is not None else None
    if pinned is None:
        v.add("pin", "INFO", "nothing pinned for this origin (a site check records no pin; "
                             "`muretai card fetch` does)")
    elif pinned.did != v.did:
        v.add("pin", "FAIL", f"{v.base.text} is pinned to {pinned.did}; the card now names "
                             f"{v.did}", pinned=pinned.did)
    else:
        v.add("pin", "PASS", "the card names the DID pinned for this origin", pinned=pinned.did)


def _teaching_refusal(result: HttpResult, request_id: str) -> tuple[str | None, str]:
    """The DID a door's teaching refusal answers for, or None and why it cannot be told apart
    from something standing in front of the door."""
    doc = _json(result.body)
    kind = result.headers.get("content-type", "")[:60]
    if not isinstance(doc, dict) or doc.get("jsonrpc") != "2.0":
        return None, f"HTTP {result.status} with a body that is no JSON-RPC answer " \
                     f"({kind or 'no content-type'}): a proxy, CDN or bot wall may be in front"
    error = doc.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    accepts = data.get("accepts") if isinstance(data, dict) else None
    if not isinstance(error, dict) or error.get("code") != _RPC_NO_ENVELOPE \
            or not isinstance(accepts, list) or not accepts or not isinstance(accepts[0], dict):
        return None, "a JSON-RPC answer without the teaching refusal " \
                     f"({int(_RPC_NO_ENVELOPE)} with accepts)"
    if doc.get("id") != request_id:
        return None, "the teaching refusal does not carry this request's id: a canned copy " \
                     "(a proxy replaying the door's bytes) cannot be told from the door"
    recipient = accepts[0].get("recipient")
    if not isinstance(recipient, str):
        return None, "the teaching refusal names no recipient DID"
    return recipient, ""


def _check_door(v: _Visit) -> None:
    from muretai_cli.seam import canonical_bytes

    request_id = f"site-check-{secrets.token_hex(8)}"
    body = {"jsonrpc": "2.0", "id": request_id, "method": "message/send", "params": {
        "message": {"kind": "message", "role": "user", "messageId": request_id,
                    "parts": [{"kind": "text", "text": KNOCK_TEXT}]}}}
    try:
        result = v.client.post_json(v.endpoint, canonical_bytes(body))
    except (Unreachable, DeadlineExceeded, Refused) as exc:
        v.add("door", "FAIL", f"nothing answered at {v.endpoint}: {exc.code}: {exc.detail}",
              endpoint=v.endpoint, outcome="unreachable")
        return
    if result.status in (404, 405, 410, 501, 502, 503, 504):
        v.add("door", "FAIL", f"no door answered at {v.endpoint}: HTTP {result.status}",
              endpoint=v.endpoint, outcome="down", status=result.status)
        return
    did, why = _teaching_refusal(result, request_id)
    if did is None:
        v.add("door", "WARN", f"unknown: {why}", endpoint=v.endpoint, outcome="unknown",
              status=result.status)
        return
    v.door_did, v.door_reached = did, True
    doc = _json(result.body)
    v.door_accepts = doc["error"]["data"]["accepts"][0] if isinstance(doc, dict) else None
    v.add("door", "PASS",
          f"the door taught its terms ({int(_RPC_NO_ENVELOPE)} with accepts) for {did}",
          endpoint=v.endpoint, outcome="door", status=result.status, answersFor=did)


def _check_signed_knock(v: _Visit, signer: SigningKey | None) -> None:
    from muretai_cli.artifacts.message import (
        REPLY_BINDINGS,
        build_message_send,
        new_context_id,
        signed_message,
    )
    from muretai_cli.seam import canonical_bytes
    from muretai_cli.visit.dm import check_reply, sent_of

    if signer is None:
        v.add("door-signed", "INFO", "not run (add --as NAME to knock signed)")
        return
    if not v.door_reached or v.did is None:
        v.add("door-signed", "INFO", "not run: the door did not answer the unsigned knock")
        return
    message = signed_message(signer, to=v.did, text=KNOCK_TEXT, now=v.now,
                             context_id=new_context_id())
    try:
        result = v.client.post_json(v.endpoint, canonical_bytes(build_message_send(message)))
    except (Unreachable, DeadlineExceeded, Refused) as exc:
        v.add("door-signed", "FAIL", f"the signed knock got no answer: {exc.detail}")
        return
    doc = _json(result.body)
    doc = doc if isinstance(doc, dict) else {}
    error = doc.get("error")
    if isinstance(error, dict):
        data = error.get("data")
        reason = data.get("reason") if isinstance(data, dict) else None
        v.add("door-signed", "INFO", f"the door answered JSON-RPC {error.get('code')} "
                                     f"({str(reason)[:80]}): its policy holds or refuses this "
                                     "sender, so there is no signed reply to verify",
              rpcCode=error.get("code"), reason=reason)
        return
    section = (v.card or {}).get("muretai")
    promised = isinstance(section, Mapping) and section.get("replyBinding") in REPLY_BINDINGS
    sent = sent_of(signer.did, message, promised=promised)
    reply = check_reply(doc, door_did=v.did, me=signer.did, sent=sent, now=v.now)
    if reply.verdict.ok:
        v.add("door-signed", "PASS", f"a reply signed by {v.did}, bound to the "
                                     f"{reply.binding or 'conversation'}", sender=signer.did)
    else:
        first = reply.verdict.errors[0]
        v.add("door-signed", "FAIL", f"the reply is not verified: {first.code}: {first.detail}",
              sender=signer.did)


def _check_cors(v: _Visit) -> None:
    card_url = v.base.join(CARD_PATH)
    facts: dict[str, Any] = {}
    missing = []
    for name, url in (("card", card_url), ("door", v.endpoint)):
        try:
            result = v.client.options(url)
        except (Unreachable, DeadlineExceeded, Refused) as exc:
            facts[name] = {"url": url, "error": exc.code}
            missing.append(f"OPTIONS {url}: {exc.code}")
            continue
        allow = result.headers.get("access-control-allow-origin")
        facts[name] = {"url": url, "status": result.status, "allowOrigin": allow}
        if not 200 <= result.status < 300 or not allow:
            missing.append(f"OPTIONS {url}: HTTP {result.status}, allow-origin {allow!r}")
    got = v.get(CARD_PATH)
    if got is not None and not got.headers.get("access-control-allow-origin"):
        missing.append("GET of the card carries no Access-Control-Allow-Origin")
    if missing:
        v.add("cors", "WARN", "; ".join(missing), **facts)
    else:
        v.add("cors", "PASS", "preflight answered and Access-Control-Allow-Origin sent on the "
                              "card and the door", **facts)


def _check_wba(v: _Visit) -> None:
    from muretai_cli.seam import DIRECTORY_MEDIA_TYPE, DIRECTORY_PATH, verify_directory

    url = v.base.origin + DIRECTORY_PATH
    try:
        result: HttpResult | None = v.client.get(url, accept=DIRECTORY_MEDIA_TYPE)
    except (Refused, Unreachable, DeadlineExceeded, InputError):
        result = None
    if result is None or result.status != 200:
        status = result.status if result is not None else None
        v.add("wba-directory", "INFO", f"not published (HTTP {status})", url=url, status=status)
        return
    try:
        dids = verify_directory(result.headers, result.body, authority=domain_of(v.base),
                                now=v.now)
    except MuretaiError as exc:
        v.add("wba-directory", "FAIL", f"published, and it proves nothing: {exc.code}: "
                                       f"{exc.detail}", url=url, status=200)
        return
    names = "the card's DID" if v.did in dids else "other keys than the card's DID"
    v.add("wba-directory", "PASS", f"signed for this origin by each key it lists ({names})",
          url=url, status=200, dids=dids, namesCardDid=v.did in dids)


def _fact(v: _Visit, check: str, path: str, describe: Callable[[bytes], dict[str, Any]]
          ) -> None:
    url = v.base.join(path)
    result = v.get(path, accept="text/plain")
    if result is None:
        v.add(check, "INFO", f"{url}: could not be fetched", url=url)
        return
    facts: dict[str, Any] = {"url": url, "status": result.status}
    if result.status == 200:
        facts.update(describe(result.body))
    v.add(check, "INFO", f"{url}: HTTP {result.status}", **facts)


def _robots(body: bytes) -> dict[str, Any]:
    agents: list[str] = []
    rules = 0
    for line in body.decode("utf-8", "replace").splitlines()[:2000]:
        name, _, value = line.split("#", 1)[0].partition(":")
        name = name.strip().lower()
        if name == "user-agent" and value.strip() and value.strip() not in agents:
            agents.append(value.strip()[:80])
        elif name in ("allow", "disallow"):
            rules += 1
    return {"userAgents": agents[:50], "rules": rules}


def _llms(body: bytes) -> dict[str, Any]:
    lines = body.decode("utf-8", "replace").splitlines()
    return {"bytes": len(body), "title": lines[0][:120] if lines else ""}


def check_site(base: BaseUrl, *, client: SafeClient, now: int, pins: PinStore | None = None,
               signer: SigningKey | None = None) -> SiteReport:
    """Run every check against ``base``. Raises only when the site cannot be reached at all
    (``Unreachable``/``DeadlineExceeded``, exit 3/5) or the URL is unusable."""
    from muretai_cli.site import _surfaces as surfaces

    v = _Visit(base, client, now)
    if _check_card(v):
        _check_alias(v)
        _check_signature(v)
        _did_configuration(v)
        _check_door(v)
        _check_origin(v)
        _check_fresh(v)
        _check_pin(v, pins)
        _check_signed_knock(v, signer)
        _check_cors(v)
        surfaces.check_terms(v)
        surfaces.check_door_terms(v)
    else:
        for check in ("card-alias", "signature", "origin", "fresh", "pin", "door",
                      "door-signed", "cors", "did-configuration", "terms", "door-terms"):
            v.add(check, "INFO", "not checked: there is no card to follow")
    surfaces.check_front(v)
    _check_wba(v)
    _fact(v, "llms-txt", "/llms.txt", _llms)
    _fact(v, "robots-txt", "/robots.txt", _robots)
    return SiteReport(base.text, tuple(v.findings[c] for c in ORDER), now)


def site_base(url: str) -> BaseUrl:
    """The base a site check starts from: a base URL or a card URL (http only on loopback)."""
    from muretai_cli.urls import base_from_any

    return base_from_any(url)
