"""``muretai probe``: every way in routed or excluded with its reason (agent-web-router
AWR-n), GET only under one deadline, the site's order only over what the rules allow, and
hostile answers as named reasons; exit 0 with a way in, 2 without."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from muretai_cli.net import SafeClient
from muretai_cli.seam import SigningKey, canonical_bytes, sign_card_envelope
from muretai_cli.site import site_base
from muretai_cli.urls import CARD_PATH, CARD_SIG_PATH
from muretai_cli.visit.probe import OnHand, ProbeReport, probe
from tests.cli_helpers import in_process, muretai, new_identity
from tests.door_helpers import live_door
from tests.servers import serve_asgi

KEY = SigningKey(bytes(range(40, 72)))
OTHER = SigningKey(bytes(range(100, 132)))
JSON = {"content-type": "application/json"}
PAGE = (b'<html><form toolname="book_table" tooldescription="Book a table" method="get">'
        b"</form></html>")
Answer = tuple[int, dict[str, str], bytes]


@dataclass
class Site:
    """A site whose every answer is set by the test; ``seen`` logs (method, path)."""

    routes: dict[str, Answer] = field(default_factory=dict)
    slow: set[str] = field(default_factory=set)
    seen: list[tuple[str, str]] = field(default_factory=list)
    base: str = ""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        self.seen.append((scope["method"], scope["path"]))
        if scope["path"] in self.slow:
            await asyncio.sleep(3)
        status, headers, body = self.routes.get(scope["path"], (404, JSON, b"{}"))
        await send({"type": "http.response.start", "status": status, "headers": [
            (k.encode(), v.encode()) for k, v in {**headers,
                                                   "content-length": str(len(body))}.items()]})
        await send({"type": "http.response.body", "body": body})

    def card(self, **changes: Any) -> dict[str, Any]:
        card = {"name": "shop", "did": KEY.did, "url": self.base, "skills": [],
                "supportedInterfaces": [{"url": self.base + "/", "protocolBinding": "JSONRPC",
                                         "protocolVersion": "0.2"}]}
        return {k: v for k, v in {**card, **changes}.items() if v is not None}

    def publish(self, card: dict[str, Any], *, signer: SigningKey | None = KEY) -> None:
        self.routes[CARD_PATH] = (200, JSON, canonical_bytes(card))
        if signer is not None:
            env = sign_card_envelope(signer, card, int(time.time()))
            self.routes[CARD_SIG_PATH] = (200, JSON, canonical_bytes(env))
        else:
            self.routes.pop(CARD_SIG_PATH, None)

    def everything(self, prefer: list[Any] | None = None) -> None:
        agent_entry = {"open_door": True, **({"prefer": prefer} if prefer else {})}
        self.publish(self.card(agentEntry=agent_entry))
        self.routes["/.well-known/mcp.json"] = (200, JSON, json.dumps(
            {"endpoint": self.base + "/mcp"}).encode())
        self.routes["/"] = (200, {"content-type": "text/html"}, PAGE)


@contextmanager
def site() -> Iterator[Site]:
    s = Site()
    with serve_asgi(s) as base:
        s.base = base
        yield s


def run_probe(s: Site, timeout: float = 10, **hand: bool) -> ProbeReport:
    with SafeClient(timeout=timeout) as client:
        return probe(site_base(s.base), client=client, on_hand=OnHand(**hand))


def kinds(report: ProbeReport) -> tuple[list[str], dict[str, str]]:
    ways = [w.kind for w in report.routes] + [w.kind for w in report.excluded]
    assert sorted(ways) == ["card", "mcp", "page"], "each way exactly once (AWR-12)"
    return [w.kind for w in report.routes], {w.kind: w.code for w in report.excluded}


def test_routes_follow_what_is_on_hand() -> None:
    with site() as s:
        s.everything()
        assert kinds(run_probe(s, key=True)) == (
            ["card"], {"mcp": "mcp-needs-token", "page": "page-needs-browser"})
        assert kinds(run_probe(s, key=True, token=True))[0] == ["card", "mcp"]
        assert kinds(run_probe(s, key=True, browser=True))[0] == ["card", "page"]
        assert kinds(run_probe(s, person=True))[0] == ["page", "card"]  # AWR-8
        assert {m for m, _ in s.seen} == {"GET"}, "a probe only GETs (AWR-1)"


def test_robots_closes_the_page_to_a_headless_visit_only() -> None:
    with site() as s:
        s.everything()
        s.routes["/robots.txt"] = (200, {"content-type": "text/plain"},
                                   b"User-agent: *\nDisallow: /\n")
        assert kinds(run_probe(s, browser=True))[1]["page"] == "robots-disallow"
        assert "page" in kinds(run_probe(s, person=True))[0]
        s.routes["/robots.txt"] = (200, {"content-type": "text/plain"},
                                   b"User-agent: *\nDisallow: /private\n")
        assert "page" in kinds(run_probe(s, browser=True))[0]


def test_the_sites_order_reorders_only_what_the_rules_allow() -> None:
    with site() as s:
        s.everything(prefer=[{"kind": "mcp", "when": "token"}, "page", "teleport",
                             {"kind": "card", "when": "sometimes"}])
        report = run_probe(s, key=True, token=True, browser=True)
        assert report.order == "site" and kinds(report)[0] == ["mcp", "page", "card"]
        report = run_probe(s, key=True)  # mcp needs a token, page a browser: still excluded
        assert kinds(report)[0] == ["card"] and report.order == "default"
        # a card whose signature fails declares nothing (AWR-19)
        env = json.loads(s.routes[CARD_SIG_PATH][2])
        env["sig"] = ("B" if env["sig"][0] == "A" else "A") + env["sig"][1:]
        s.routes[CARD_SIG_PATH] = (200, JSON, canonical_bytes(env))
        report = run_probe(s, key=True, token=True, browser=True)
        assert report.order == "default" and kinds(report)[0] == ["mcp", "page"]
        assert kinds(report)[1]["card"] == "card-signature-refused"


@pytest.mark.parametrize(("mutate", "code"), [
    (lambda s: s.publish(s.card(url="https://elsewhere.example")), "card-other-origin"),
    (lambda s: s.publish(s.card(did=None)), "card-names-no-did"),
    (lambda s: s.routes.__setitem__(CARD_SIG_PATH, (200, JSON, canonical_bytes(
        sign_card_envelope(OTHER, s.card(did=OTHER.did), int(time.time()))))),
     "card-signature-refused"),
    (lambda s: s.routes.__setitem__(CARD_SIG_PATH, (200, JSON, canonical_bytes(
        sign_card_envelope(KEY, s.card(name="another"), int(time.time()))))),
     "card-signature-other-card"),
    (lambda s: s.publish(s.card(supportedInterfaces=[{"url": "https://elsewhere.example/"}])),
     "door-other-origin"),
    (lambda s: s.routes.__setitem__(CARD_PATH, (302, {"location": s.base.replace(
        "127.0.0.1", "localhost") + CARD_PATH}, b"")), "card-redirected"),
    (lambda s: s.routes.__setitem__(CARD_PATH, (200, JSON, b"\xef\xbb\xbf{}")),
     "malformed-card"),
    (lambda s: s.routes.__setitem__(CARD_PATH, (200, JSON, b"[" * 100000 + b"]" * 100000)),
     "malformed-card"),
])
def test_the_card_route_is_excluded_for_its_own_reason(mutate: Any, code: str) -> None:
    with site() as s:
        s.everything()
        mutate(s)
        assert kinds(run_probe(s, key=True))[1]["card"] == code


@pytest.mark.parametrize(("body", "code"), [
    (json.dumps({"endpoint": "https://elsewhere.example/mcp"}).encode(), "mcp-other-origin"),
    (b"\xef\xbb\xbf{}", "malformed-mcp-card"), (b"{" * 60000, "malformed-mcp-card"),
    (b'["a list"]', "malformed-mcp-card"), (b"{}", "mcp-card-no-endpoint"),
    (b" " * (1024 * 1024 + 1), "mcp-unfetched"),
])
def test_a_hostile_mcp_card_is_a_named_exclusion(body: bytes, code: str) -> None:
    with site() as s:
        s.everything()
        s.routes["/.well-known/mcp.json"] = (200, JSON, body)
        assert kinds(run_probe(s, token=True))[1]["mcp"] == code


def test_an_open_mcp_server_needs_no_token_and_the_unsigned_card_is_noted() -> None:
    with site() as s:
        s.publish(s.card(), signer=None)
        s.routes["/.well-known/mcp.json"] = (200, JSON, json.dumps(
            {"remotes": [{"url": s.base + "/mcp"}], "authentication": {"required": False}}
        ).encode())
        report = run_probe(s)
        assert kinds(report)[0] == ["card", "mcp"]
        assert any("AWR-7" in n for n in report.notes)
        s.routes["/.well-known/mcp.json"] = (200, JSON, json.dumps(
            {"transport": {"url": s.base + "/mcp"}, "authentication": None}).encode())
        assert kinds(run_probe(s))[0] == ["card", "mcp"]
        s.routes["/.well-known/mcp.json"] = (200, JSON, json.dumps(
            {"transports": [{"url": s.base + "/mcp"}], "authentication": {}}).encode())
        assert kinds(run_probe(s))[1]["mcp"] == "mcp-needs-token"


def test_a_slow_step_is_a_note_within_one_deadline() -> None:
    with site() as s:
        s.everything()
        s.slow = {"/.well-known/mcp.json"}
        started = time.monotonic()
        report = run_probe(s, timeout=1.5, key=True, token=True)
        assert time.monotonic() - started < 2.5
    assert kinds(report)[1]["mcp"] == "mcp-unfetched"
    assert any("deadline" in n for n in report.notes)


def test_our_own_door_is_a_card_route() -> None:
    with live_door("open", name="probed") as door, SafeClient(timeout=10) as client:
        report = probe(site_base(door.base), client=client, on_hand=OnHand(key=True))
    assert [w.kind for w in report.routes] == ["card"]
    card = report.routes[0].facts
    assert card["signed"] is True and card["did"] == door.did
    assert report.signposts["link"]["links"][0]["rel"] == "service-desc"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return in_process("probe", *args)  # as the command line runs it; one real process below


def test_cli_exit_codes_json_and_the_address_rule() -> None:
    with site() as s:
        assert _cli(s.base).returncode == 2  # loopback refused without --allow-private
        none = _cli(s.base, "--allow-private", "--json")
        doc = json.loads(none.stdout)
        assert none.returncode == 2 and next(iter(doc)) == "ok" and doc["ok"] is False
        s.everything()
        new_identity("visitor")
        got = _cli(s.base, "--allow-private", "--key", "visitor", "--json")
        doc = json.loads(got.stdout)
        assert got.returncode == 0 and doc["routes"][0]["kind"] == "card"
        assert doc["onHand"]["key"] is True
        text = _cli(s.base, "--allow-private")
        assert text.returncode == 0 and "1. card" in text.stdout
        assert _cli(s.base, "--allow-private", "--key", "nobody").returncode == 2


def test_nothing_answering_is_unreachable_not_no_way_in() -> None:
    got = muretai("probe", "http://127.0.0.1:1", "--allow-private", "--json", "--timeout", "5")
    assert got.returncode == 3, got.stderr
    assert json.loads(got.stdout)["ok"] is False
