"""What to change for each check that is not a PASS, and where the rule is written down."""

from __future__ import annotations

from muretai_cli.inbox.ladder import Code
from muretai_cli.site._report import Remedy

SEAM = "muretai seam spec (muretai/agent-seam, spec/seam.md)"
ENTRY = "agent-entry v1 (muretai/agent-entry, spec/v1.md)"
ROUTER = "agent-web-router v0 (muretai/agent-web-router, spec/v0.md)"

REMEDIES: dict[str, Remedy] = {
    "card": Remedy(
        "Serve the Agent Card as a JSON object at /.well-known/agent-card.json (HTTP 200, "
        "application/json). If you run no agent here, publish no card at all.",
        f"RFC 8615 (well-known URIs); {ENTRY} §4"),
    "card-alias": Remedy(
        "Serve /.well-known/agent.json with the same bytes as agent-card.json, or not at all "
        "(remove the stale copy).",
        f"{ENTRY} §4 (agent.json is an alias of agent-card.json)"),
    "signature": Remedy(
        "Serve /.well-known/agent-card.sig.json: {v: 1, typ: \"agentcard\", card, ts, sig}, "
        "signed by the key the card's did names over exactly the card served "
        "(`muretai serve` does this; `muretai sign card` for a static site).",
        f"{SEAM} §4 (the signed Agent Card envelope)"),
    "origin": Remedy(
        "Make the card's url this site's own base URL, sign it with this site's own key, and "
        "if you publish /.well-known/did-configuration.json, let it link that same DID to "
        "this domain (`muretai domain link`). Never serve a card copied from another site.",
        f"{SEAM} §4 and §7 (domain linkage); DIF Well-Known DID Configuration"),
    "fresh": Remedy(
        "Re-sign the envelope while the service runs (a live door re-signs at least hourly); "
        "an old signature says nobody may be home. If the service is gone, remove the card.",
        f"{SEAM} §4 ({ENTRY} §4.3: 6-hour window)"),
    "pin": Remedy(
        "If the key change is yours, tell the people who pinned you; a visitor forgets the "
        "old pin with `muretai card forget URL`. If it is not yours, the site is not serving "
        "your card: find out who changed it before anything else.",
        "trust on first use (the DID pinned for this origin)"),
    "door": Remedy(
        "Answer POST at the card's url yourself: an unsigned message/send must get the "
        f"JSON-RPC teaching refusal ({int(Code.SIGNATURE)}, data.accepts naming your DID and "
        "endpoint) with "
        "the request's id. Let agent traffic reach the door past any proxy, CDN or bot wall.",
        f"{ENTRY} §4 (the door's keyless walk-in answer); JSON-RPC 2.0 §5"),
    "door-signed": Remedy(
        "Answer a signed message/send with a reply signed by the card's DID over the six "
        "fields, to the sender, bound to the message it answers.",
        f"{SEAM} §3 (the six signed fields)"),
    "cors": Remedy(
        "Answer OPTIONS on the card and the door with 204 and Access-Control-Allow-Origin, "
        "and send Access-Control-Allow-Origin on the card itself, so browser-based agents "
        "can read it.",
        "WHATWG Fetch standard §3.2 (the CORS protocol, "
        "https://fetch.spec.whatwg.org/#http-cors-protocol); " + ENTRY + " AE-14"),
    "terms": Remedy(
        "State the door's terms on the card as A2A securitySchemes/security: one scheme whose "
        "agentEntry object carries recipient (the card's own did), signedFields (the six), "
        "canonicalization, signature, timestamp, in and exampleRequest (`muretai serve` "
        "does). A card whose terms name another DID sends every signed message elsewhere.",
        f"{ENTRY} AE-8 (terms stated on the card); {SEAM} §3 (the six signed fields)"),
    "door-terms": Remedy(
        "Build the keyless refusal's data.accepts[0] from the very object the card publishes "
        "under securitySchemes.<scheme>.agentEntry, so the menu and the door can never "
        "teach two different recipes; re-publish the card when the door's terms change.",
        f"{ENTRY} AE-24 (the refusal that teaches: accepts[0] is the card's scheme object)"),
    "signpost": Remedy(
        "Send `Link: <https://your.site/.well-known/agent-card.json>; rel=\"service-desc\"` "
        "(and rel=\"https://muretai.net/rel/agent-entry\") on the front page, so an agent that "
        "fetched the page finds the card without parsing HTML (`muretai serve` does at the "
        "door's address).",
        f"RFC 8288 (Web Linking); RFC 8631 (service-desc); {ENTRY} (the notice); "
        f"{ROUTER} AWR-3a"),
    "catch-all": Remedy(
        "Answer 404 for paths you do not serve (a single-page app's fallback route should "
        "not cover /.well-known/): while every path answers 200, no visitor can tell a "
        "published file from your front page.",
        f"{ENTRY} AE-4 (no unadvertised address answers); RFC 9110 §15.5.5 (404)"),
    "wba-directory": Remedy(
        "Serve /.well-known/http-message-signatures-directory as "
        "application/http-message-signatures-directory+json, signed over @authority by "
        "every key it lists (`muretai serve` does), or do not serve it.",
        f"RFC 9421; web-bot-auth directory draft; {SEAM} §8"),
}
