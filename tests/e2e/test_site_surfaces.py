"""``site check``'s facts (MCP, skills index, markdown, Permissions-Policy, WebMCP forms),
read from what a site serves and never judged; a catch-all server establishes none of them;
hostile answers are named findings, and a card redirected elsewhere is a FAIL row in every
format (issue 22 item 17)."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from muretai_cli.net import SafeClient
from muretai_cli.site import SiteReport, check_site, site_base
from muretai_cli.urls import CARD_PATH
from tests.cli_helpers import in_process
from tests.site_fixture import JSON, FixtureSite, fixture_site

LONG = "d" * 501
PAGE = (b'<html><form toolname="book_table" tooldescription="Book a table" method="post" '
        b'action="/book"></form><form toolname="' + b"n" * 31 + b'" tooldescription="'
        + LONG.encode() + b'"></form><tool name="hours" description="Opening hours">'
        b"<script>document.modelContext</script></html>")


def _check(site: FixtureSite) -> SiteReport:
    with SafeClient(timeout=10) as client:
        return check_site(site_base(site.base), client=client, now=int(time.time()))


def _publish_everything(site: FixtureSite) -> None:
    html = {"content-type": "text/html", "permissions-policy": "tools=(self)",
            "link": f'<{site.base}{CARD_PATH}>; rel="service-desc"'}
    site.overrides.update({
        ("GET", "/"): (200, html, PAGE),
        ("GET", "/.well-known/mcp.json"): (200, JSON, json.dumps(
            {"endpoint": site.base + "/mcp", "authentication": {"required": False}}).encode()),
        ("GET", "/.well-known/mcp/server-card.json"): (200, JSON, json.dumps(
            {"name": "s", "remotes": [{"url": "https://elsewhere.example/mcp"}]}).encode()),
        ("GET", "/.well-known/agent-skills/index.json"): (200, JSON, json.dumps(
            {"skills": [{"name": "a"}, {"name": "b"}]}).encode()),
    })


def test_the_facts_are_read_and_reported_as_info() -> None:
    with fixture_site() as site:
        _publish_everything(site)
        report = _check(site)
    facts = {f.check: f for f in report.findings}
    for check in ("mcp", "agent-skills", "markdown", "permissions-policy", "webmcp"):
        assert facts[check].status == "INFO", check
    mcp, card = facts["mcp"].facts["documents"]
    assert mcp["present"] and mcp["open"] and mcp["onOrigin"]
    assert card["present"] and not card["onOrigin"] and card["name"] == "s"
    assert facts["agent-skills"].facts["skills"] == 2
    assert facts["permissions-policy"].facts["tools"] is True
    web = facts["webmcp"].facts
    assert [t["name"] for t in web["tools"]] == ["book_table", "n" * 31, "hours"]
    assert web["tools"][0]["method"] == "post" and web["imperativeHint"] is True
    assert len(web["overBudget"]) == 1 and "name 31 > 30" in web["overBudget"][0]
    assert "description 501 > 500" in web["overBudget"][0]
    assert facts["signpost"].status == "PASS"


def test_absent_facts_say_so() -> None:
    with fixture_site() as site:
        report = _check(site)
    facts = {f.check: f for f in report.findings}
    assert [d["present"] for d in facts["mcp"].facts["documents"]] == [False, False]
    assert facts["agent-skills"].facts["present"] is False
    assert facts["permissions-policy"].facts["tools"] is False
    assert facts["webmcp"].facts["tools"] == []
    assert facts["markdown"].facts["served"] is False


@pytest.mark.parametrize("answer", [
    (200, {"content-type": "text/html"}, b"<html><body>app</body></html>"),
    (200, JSON, b'{"endpoint": "https://anything.example/", "skills": []}'),  # JSON for all
])
def test_a_catch_all_server_establishes_no_fact(answer: Any) -> None:
    with fixture_site() as site:
        site.catch_all, site.catch_all_answer = True, answer
        report = _check(site)
    facts = {f.check: f for f in report.findings}
    assert facts["catch-all"].status == "WARN"
    assert [d["present"] for d in facts["mcp"].facts["documents"]] == [False, False]
    assert facts["agent-skills"].facts["present"] is False


@pytest.mark.parametrize("body", [b"\xef\xbb\xbf{}", b"[" * 50000 + b"]" * 50000,
                                  b'{"endpoint":', b"{}", b'"just a string"'])
def test_a_hostile_mcp_card_is_a_named_fact(body: bytes) -> None:
    with fixture_site() as site:
        site.overrides[("GET", "/.well-known/mcp.json")] = (200, JSON, body)
        report = _check(site)
    doc = report.finding("mcp").facts["documents"][0]
    assert doc["present"] is False or doc["reason"] in ("malformed-mcp-card",
                                                        "mcp-card-no-endpoint")


def test_hostile_front_pages_are_findings_not_tracebacks() -> None:
    with fixture_site() as site:
        site.overrides[("GET", "/")] = (200, {
            "content-type": "text/html", "link": "<" * 9000 + ">; rel=service-desc",
            "permissions-policy": "x" * 9000}, b"<form toolname='a' tooldescription" * 20000)
        report = _check(site)
        assert report.finding("signpost").status == "WARN"
        assert report.finding("webmcp").status == "INFO"
        site.overrides[("GET", "/")] = (302, {"location": "https://elsewhere.example/"}, b"")
        assert _check(site).finding("signpost").status == "INFO"


def _redirect_card(site: FixtureSite) -> None:
    other = site.base.replace("127.0.0.1", "localhost")
    site.overrides[("GET", CARD_PATH)] = (302, {"location": other + CARD_PATH}, b"")


@pytest.mark.parametrize("fmt", ["json", "junit", "github", "text"])
def test_a_card_redirected_to_another_origin_is_a_fail_row(fmt: str) -> None:
    with fixture_site() as site:
        _redirect_card(site)
        proc = in_process("site", "check", site.base, "--allow-private", "--format", fmt)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    out = proc.stdout
    if fmt == "json":
        doc: dict[str, Any] = json.loads(out)
        assert next(iter(doc)) == "ok" and doc["ok"] is False
        card = next(f for f in doc["findings"] if f["check"] == "card")
        assert card["status"] == "FAIL" and card["facts"]["reason"] == "cross-origin-redirect"
    elif fmt == "junit":
        root = ET.fromstring(out.split("\n", 1)[1])
        failed = [c.get("name") for c in root.findall(".//testcase")
                  if c.find("failure") is not None]
        assert failed and str(failed[0]).startswith("card:")
    else:
        assert "cross-origin-redirect" in out
