"""``site check``: a live door of ours passes; each producer mutation turns exactly its own
check red (FAIL or WARN) and no other; the address rule; the CI formats."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import Result

from muretai_cli.home import PinStore
from muretai_cli.net import SafeClient
from muretai_cli.seam import (
    DID_CONFIGURATION_PATH,
    DIRECTORY_PATH,
    SigningKey,
    canonical_bytes,
    did_configuration,
    sign_card_envelope,
    sign_directory,
    sign_domain_linkage,
)
from muretai_cli.site import SiteReport, check_site, site_base
from muretai_cli.urls import CARD_PATH, CARD_SIG_PATH, LEGACY_CARD_PATH
from tests.cli_helpers import run
from tests.door_helpers import live_door
from tests.site_fixture import JSON, FixtureSite, fixture_site

RED = ("FAIL", "WARN")
OTHER = SigningKey(bytes(range(100, 132)))


def run_check(base: str, *, signer: SigningKey | None = None,
              pins: PinStore | None = None) -> SiteReport:
    with SafeClient(timeout=10) as client:
        return check_site(site_base(base), client=client, now=int(time.time()), pins=pins,
                          signer=signer)


def statuses(report: SiteReport) -> dict[str, str]:
    return {f.check: f.status for f in report.findings}


def test_a_live_door_of_ours_passes_everything() -> None:
    with live_door("open", name="plain") as live:
        report = run_check(live.base, signer=SigningKey.generate())
    got = statuses(report)
    assert report.ok
    for check in ("card", "card-alias", "signature", "origin", "fresh", "door", "door-signed",
                  "cors", "terms", "door-terms", "signpost", "catch-all"):
        assert got[check] == "PASS", (check, report.finding(check).detail)
    assert not [c for c, s in got.items() if s in RED], got
    assert "score" not in json.dumps(report.to_json()).lower()


def _corrupt(site: FixtureSite) -> None:
    env = json.loads(site.door.envelope_bytes())
    sig = env["sig"]
    env["sig"] = ("B" if sig[0] == "A" else "A") + sig[1:]
    site.overrides[("GET", CARD_SIG_PATH)] = (200, JSON, canonical_bytes(env))


def _aged(site: FixtureSite) -> None:
    card = site.card()
    site.serve_card(card, sign_card_envelope(site.key, card, int(time.time()) - 7 * 3600))


def _other_origin(site: FixtureSite) -> None:
    card = {**site.card(), "url": "https://shop.example"}
    site.serve_card(card, sign_card_envelope(site.key, card, int(time.time())))


def _copied(site: FixtureSite) -> None:
    card = _with_terms({**site.card(), "did": OTHER.did, "url": "https://other.example"},
                       recipient=OTHER.did)
    site.serve_card(card, sign_card_envelope(OTHER, card, int(time.time())))


def _with_terms(card: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``card`` with its published terms changed (None removes a member)."""
    scheme = dict(card["securitySchemes"]["did-key-ed25519"])
    terms = {k: v for k, v in {**scheme["agentEntry"], **changes}.items() if v is not None}
    schemes = {"did-key-ed25519": {**scheme, "agentEntry": terms}}
    return {**card, "securitySchemes": schemes}


def _signed(site: FixtureSite, card: dict[str, Any]) -> None:
    site.serve_card(card, sign_card_envelope(site.key, card, int(time.time())))


def _no_terms(site: FixtureSite) -> None:
    card = {k: v for k, v in site.card().items() if k not in ("securitySchemes", "security")}
    _signed(site, card)


def _door_drifts(site: FixtureSite) -> None:
    """The card publishes other terms than the door teaches (another endpoint)."""
    card = site.card()
    _signed(site, _with_terms(card, endpoint=card["url"] + "/old-door"))


def _catch_all(site: FixtureSite) -> None:
    site.catch_all = True


def _alias_differs(site: FixtureSite) -> None:
    card = {**site.card(), "name": "an older card"}
    site.overrides[("GET", LEGACY_CARD_PATH)] = (200, JSON, canonical_bytes(card))


def _link_other(site: FixtureSite) -> None:
    now = int(time.time())
    doc = did_configuration([sign_domain_linkage(OTHER, site.domain, nbf=now - 60,
                                                 exp=now + 60)])
    site.overrides[("GET", DID_CONFIGURATION_PATH)] = (200, JSON, json.dumps(doc).encode())


def _forged_directory(site: FixtureSite) -> None:
    body, _ = sign_directory(site.key, site.domain, created=int(time.time()))
    _, headers = sign_directory(OTHER, site.domain, created=int(time.time()))
    site.overrides[("GET", DIRECTORY_PATH)] = (
        200, {k.lower(): v for k, v in headers.items()}, body)


def _canned_refusal(site: FixtureSite) -> None:
    _, body, _ = site.door.handle_post(json.dumps({
        "jsonrpc": "2.0", "id": "captured-earlier", "method": "message/send",
        "params": {"message": {"kind": "message", "role": "user", "messageId": "m",
                               "parts": [{"kind": "text", "text": "x"}]}}}).encode())
    site.overrides[("POST", "/")] = (200, JSON, body)


MUTATIONS: dict[str, tuple[str, str, Callable[[FixtureSite], None]]] = {
    # mutation: (the check it must turn red, the status, the producer change)
    "signature removed": ("signature", "WARN", lambda s: s.serve_card(s.card(), None)),
    "signature corrupted": ("signature", "FAIL", _corrupt),
    "envelope aged 7 h": ("fresh", "WARN", _aged),
    "signed for another origin": ("origin", "FAIL", _other_origin),
    "copied from another site": ("origin", "FAIL", _copied),
    "did-configuration links another DID": ("origin", "FAIL", _link_other),
    "agent.json differs": ("card-alias", "WARN", _alias_differs),
    "door down": ("door", "FAIL", lambda s: s.overrides.__setitem__(
        ("POST", "/"), (502, {"content-type": "text/html"}, b"<h1>502 Bad Gateway</h1>"))),
    "proxy page in front": ("door", "WARN", lambda s: s.overrides.__setitem__(
        ("POST", "/"), (403, {"content-type": "text/html"}, b"<h1>Checking your browser"))),
    "proxy replays the door's bytes": ("door", "WARN", _canned_refusal),
    "no CORS preflight": ("cors", "WARN", lambda s: s.overrides.__setitem__(
        ("OPTIONS", CARD_PATH), (405, {}, b""))),
    "forged key directory": ("wba-directory", "FAIL", _forged_directory),
    "terms name another recipient": ("terms", "FAIL", lambda s: _signed(
        s, _with_terms(s.card(), recipient=OTHER.did))),
    "terms sign other fields": ("terms", "FAIL", lambda s: _signed(
        s, _with_terms(s.card(), signedFields=["from", "text", "to"]))),
    "no terms on the card": ("terms", "WARN", _no_terms),
    "door drifts from the card's terms": ("door-terms", "FAIL", _door_drifts),
    "no Link on the front page": ("signpost", "WARN", lambda s: s.overrides.__setitem__(
        ("GET", "/"), (200, {"content-type": "text/html"}, b"<h1>Welcome</h1>"))),
    "Link to another card": ("signpost", "WARN", lambda s: s.overrides.__setitem__(
        ("GET", "/"), (200, {"content-type": "text/html", "link":
                             '<https://other.example/.well-known/agent-card.json>; '
                             'rel="service-desc"'}, b"<h1>Welcome</h1>"))),
    "catch-all server": ("catch-all", "WARN", _catch_all),
}


def test_each_mutation_turns_exactly_its_own_check_red() -> None:
    with fixture_site() as site:
        baseline = statuses(run_check(site.base))
        assert not [c for c, s in baseline.items() if s in RED], baseline
        assert baseline["wba-directory"] == baseline["origin"] == "PASS"
        assert set(MUTATIONS_CHECKS) <= {c for c, s in baseline.items() if s == "PASS"}
        for name, (check, status, mutate) in MUTATIONS.items():
            site.reset()
            mutate(site)
            report = run_check(site.base)
            got = statuses(report)
            assert got[check] == status, (name, report.finding(check).detail)
            # no other check turns red (one that cannot be judged any more says INFO)
            others = {c: s for c, s in got.items() if c != check and s in RED}
            assert not others, (name, others)
            assert report.ok is (status != "FAIL"), name
            assert report.finding(check).remedy is not None, name


MUTATIONS_CHECKS = {check for check, _, _ in MUTATIONS.values()}


def test_a_changed_pin_fails_only_the_pin_check() -> None:
    with fixture_site() as site:
        pins = PinStore()
        pins.record(site_base(site.base).text, OTHER.did, int(time.time()))
        got = statuses(run_check(site.base, pins=pins))
        assert got["pin"] == "FAIL"
        pins.forget(site_base(site.base).text)
        pins.record(site_base(site.base).text, site.key.did, int(time.time()))
        assert statuses(run_check(site.base, pins=pins))["pin"] == "PASS"


def _cli(*args: str) -> Result:
    return run("site", "check", *args)


def test_cli_formats_exit_codes_and_the_address_rule() -> None:
    with fixture_site() as site:
        refused = _cli(site.base)
        assert refused.exit_code == 2 and "private-address" in refused.stderr
        ok = subprocess.run([sys.executable, "-m", "muretai_cli", "site", "check", site.base,
                             "--allow-private", "--json"], check=False,
                            capture_output=True, text=True,
                            timeout=60)  # one real process, end to end
        doc: dict[str, Any] = json.loads(ok.stdout)
        assert ok.returncode == 0 and next(iter(doc)) == "ok" and doc["ok"] is True
        _corrupt(site)
        junit = _cli(site.base, "--allow-private", "--format", "junit")
        assert junit.exit_code == 1
        root = ET.fromstring(junit.stdout.split("\n", 1)[1])
        cases = root.findall(".//testcase")
        assert len(cases) == len(doc["findings"])
        failed = [c.get("name") for c in cases if c.find("failure") is not None]
        assert failed == ["signature: signed envelope verifies under the card's DID"]
        github = _cli(site.base, "--allow-private", "--format", "github")
        assert github.exit_code == 1
        assert github.stdout.startswith("::error title=site http%3A//127.0.0.1")
        assert "Publish only what is true" in github.stdout
    down = _cli(site.base, "--allow-private")
    assert down.exit_code == 3, down.stderr


@pytest.mark.parametrize("url", ["https://10.0.0.1", "https://localhost:9/x"])
def test_private_addresses_are_refused_before_dialling(url: str) -> None:
    result = _cli(url)
    assert result.exit_code == 2 and "private-address" in result.stderr, result.stderr
