"""One home per wire rule: each limit and window is defined once (seam/_limits.py) and the
table in docs/seam.md says the same numbers; an enc_pub has one spelling, judged in one
place; a card envelope's age has one judge, rendered by verify card, card fetch and site
check; "the card served is the card signed" is one check asked by card fetch and site check.
"""

from __future__ import annotations

import ast
import re
import time

import pytest

from muretai_cli.home import PinStore
from muretai_cli.net import SafeClient
from muretai_cli.seam import (
    SigningKey,
    envelope_freshness,
    is_enc_pub,
    sign_card_envelope,
    verify_served_card,
)
from muretai_cli.seam import _limits as limits
from muretai_cli.site import check_site, site_base
from muretai_cli.visit.card import fetch_card
from muretai_cli.visit.offline import check_card_envelope
from tests.repo_files import ROOT
from tests.site_fixture import FixtureSite, fixture_site

LIBRARY = ROOT / "muretai_cli"
HOME = LIBRARY / "seam" / "_limits.py"
NAMES = sorted(n for n in vars(limits) if n.isupper() and not n.startswith("_"))
# Names a window or cap went by before it had one home: none may come back.
OLD_NAMES = {"MAX_IAT_SKEW", "MAX_AGE", "MAX_AHEAD", "_HEX64", "_ENC_PUB"}


def _top_level_assignments() -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for path in sorted(LIBRARY.rglob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name):
                    where.setdefault(target.id, []).append(str(path.relative_to(LIBRARY)))
    return where


def test_each_limit_and_window_is_defined_once() -> None:
    where = _top_level_assignments()
    assert len(NAMES) >= 20
    for name in NAMES:
        assert where[name] == ["seam/_limits.py"], (name, where[name])
    for name in OLD_NAMES:
        homes = [p for p in where.get(name, []) if p != "seam/_encpub.py"]
        assert homes == [], (name, homes)


def test_the_seam_doc_table_holds_every_limit_with_its_value() -> None:
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| ([0-9,]+)", (ROOT / "docs/seam.md").read_text(),
                           re.M))
    assert sorted(rows) == NAMES
    for name in NAMES:
        assert int(rows[name].replace(",", "")) == getattr(limits, name), name


def test_the_enc_pub_spelling_lives_in_one_module() -> None:
    pattern = re.compile(r"\[0-9a-f\]\{64\}")
    homes = [str(p.relative_to(LIBRARY)) for p in sorted(LIBRARY.rglob("*.py"))
             if pattern.search(p.read_text())]
    assert homes == ["seam/_encpub.py"]
    key = SigningKey(bytes(32))
    assert is_enc_pub(key.enc_pub)
    for bad in (key.enc_pub.upper(), key.enc_pub[:63], key.enc_pub + "0", None, 7,
                " " + key.enc_pub[1:]):
        assert not is_enc_pub(bad), bad


@pytest.mark.parametrize(("offset", "verdict"), [
    (0, "fresh"), (-6 * 3600, "fresh"), (-6 * 3600 - 1, "stale"), (300, "fresh"),
    (301, "from-the-future")])
def test_one_judge_of_envelope_age_rendered_by_every_caller(offset: int, verdict: str) -> None:
    now = int(time.time())
    assert envelope_freshness(now + offset, now) == verdict
    # verify card (offline): the judge's verdict as an error or a warning
    key = SigningKey(bytes(range(32)))
    reasons = check_card_envelope(sign_card_envelope(key, {"name": "x"}, now + offset),
                                  did=key.did, now=now).reasons
    expected = {"fresh": [], "stale": [("stale-envelope", "warning")],
                "from-the-future": [("envelope-from-the-future", "error")]}[verdict]
    assert [(r.code, r.severity) for r in reasons] == expected


def _serve_dated(site: FixtureSite, offset: int) -> None:
    card = site.card()
    site.serve_card(card, sign_card_envelope(site.key, card, int(time.time()) + offset))


@pytest.mark.parametrize(("offset", "status", "fetch_codes"), [
    (-7 * 3600, "WARN", ["stale-envelope"]),
    (3600, "FAIL", ["envelope-from-the-future"])])
def test_card_fetch_and_site_check_render_the_same_age_verdict(
        offset: int, status: str, fetch_codes: list[str]) -> None:
    with fixture_site() as site, SafeClient(timeout=10) as client:
        _serve_dated(site, offset)
        now = int(time.time())
        report = check_site(site_base(site.base), client=client, now=now, pins=PinStore())
        fetched = fetch_card(site.base, client=client, now=now, record_pin=False)
    assert report.finding("fresh").status == status, report.finding("fresh").detail
    assert [r.code for r in fetched.verdict.reasons if r.code.startswith(
        ("stale", "envelope"))] == fetch_codes


def test_the_served_card_is_the_signed_one_for_card_fetch_and_site_check() -> None:
    with fixture_site() as site, SafeClient(timeout=10) as client:
        card = site.card()
        signed = {**card, "name": "a card the site never served"}
        site.serve_card(card, sign_card_envelope(site.key, signed, int(time.time())))
        now = int(time.time())
        report = check_site(site_base(site.base), client=client, now=now, pins=PinStore())
        fetched = fetch_card(site.base, client=client, now=now, record_pin=False)
    finding = report.finding("signature")
    assert finding.status == "FAIL" and finding.facts["reason"] == "envelope-card-differs"
    assert "envelope-card-differs" in [r.code for r in fetched.verdict.errors]
    key = SigningKey(bytes(range(32)))
    envelope = sign_card_envelope(key, {"name": "x"}, 1)
    assert verify_served_card(envelope, {"name": "x", "did": key.did},
                              expected_did=key.did).ts == 1
