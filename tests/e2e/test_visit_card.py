"""Card fetch against the hostile site: each rule has a site that breaks it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from muretai_cli.cli import app
from muretai_cli.errors import DeadlineExceeded, InputError, Refused
from muretai_cli.home import PinStore, TrustList
from muretai_cli.net import SafeClient
from muretai_cli.seam import SigningKey, sign_card_envelope
from muretai_cli.urls import parse_base_url
from muretai_cli.visit.card import CardCheck, EnvelopeResult, fetch_card, judge_card
from tests.hostile_site import HostileSite
from tests.servers import refused_origin


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[HostileSite, str]]:
    hostile = HostileSite()
    with hostile.running() as base:
        yield hostile, base


def fetch(base: str, name: str, **kw: Any) -> CardCheck:
    with SafeClient(timeout=kw.pop("timeout", 5.0)) as client:
        return fetch_card(f"{base}/{name}", client=client, now=int(time.time()),
                          pins=PinStore(), trust=TrustList(), **kw)


def test_genuine_card_verified_and_pinned(site: tuple[HostileSite, str]) -> None:
    hostile, base = site
    check = fetch(base, "good")
    assert check.ok and check.signature == "verified" and check.pin == "new"
    assert check.did == hostile.did("good")
    assert check.contact is not None and check.contact.ok
    assert check.org is not None and check.org.ok and check.org.facts["trusted"] is False
    assert PinStore().get(f"{base}/good").did == hostile.did("good")  # type: ignore[union-attr]
    assert fetch(base, "good").pin == "match"


def test_full_card_url_names_the_same_card(site: tuple[HostileSite, str]) -> None:
    base = site[1]
    check = fetch(base, "good/.well-known/agent-card.json")
    assert check.ok and check.base.text == f"{base}/good"


def test_redirect_to_another_origin_is_discarded(site: tuple[HostileSite, str]) -> None:
    hostile, base = site
    with pytest.raises(Refused) as err:
        fetch(base, "redirect-away")
    assert err.value.code == "cross-origin-redirect"
    assert not any(p.startswith("/good/") for p in hostile.gets[-1:])


def test_same_origin_redirect_followed(site: tuple[HostileSite, str]) -> None:
    assert fetch(site[1], "moved").ok


def test_legacy_agent_json_fallback_on_404(site: tuple[HostileSite, str]) -> None:
    check = fetch(site[1], "legacy")
    assert check.ok and check.fetched_from and check.fetched_from.endswith("/agent.json")


def test_card_naming_another_origin_refused(site: tuple[HostileSite, str]) -> None:
    check = fetch(site[1], "other-origin")
    assert not check.ok and "card-url-mismatch" in check.verdict.codes()
    assert check.pin == "unpinned" and PinStore().all() == []


def test_genuine_support_card_served_at_sales_refused(site: tuple[HostileSite, str]) -> None:
    assert fetch(site[1], "support").ok
    check = fetch(site[1], "sales")
    assert not check.ok and check.verdict.codes() == ["card-url-mismatch"]
    assert check.signature == "verified"  # genuine, and still refused for the path


def test_envelope_signed_by_another_key_refused_not_unsigned(
        site: tuple[HostileSite, str]) -> None:
    check = fetch(site[1], "forged-env")
    assert not check.ok and check.signature == "refused"
    assert "envelope-bad-signature" in check.verdict.codes()
    assert "unsigned-card" not in check.verdict.codes()


def test_edited_card_under_genuine_signature_refused(site: tuple[HostileSite, str]) -> None:
    check = fetch(site[1], "edited")
    assert not check.ok and check.verdict.codes() == ["envelope-card-differs"]


def test_float_ts_refused(site: tuple[HostileSite, str]) -> None:
    check = fetch(site[1], "float-ts")
    assert not check.ok and check.signature == "refused"


def test_stale_envelope_is_a_warning(site: tuple[HostileSite, str]) -> None:
    check = fetch(site[1], "stale-env")
    assert check.ok and [r.code for r in check.verdict.warnings] == ["stale-envelope"]


def test_unsigned_card_warns_and_require_signed_refuses(site: tuple[HostileSite, str]) -> None:
    check = fetch(site[1], "unsigned")
    assert check.ok and check.signature == "unsigned"
    assert [r.code for r in check.verdict.warnings] == ["unsigned-card"]
    assert check.pin == "unpinned"  # only verified cards are pinned
    strict = fetch(site[1], "unsigned", require_signed=True)
    assert not strict.ok and strict.verdict.codes() == ["unsigned-card"]


def test_html_at_signature_path_is_no_envelope(site: tuple[HostileSite, str]) -> None:
    check = fetch(site[1], "sig-html")
    assert check.ok and check.signature == "unsigned"


def test_did_option_refuses_other_did(site: tuple[HostileSite, str]) -> None:
    hostile, base = site
    check = fetch(base, "good", expected_did=hostile.did("open"))
    assert not check.ok and "did-mismatch" in check.verdict.codes()


def test_endless_body_abandoned_at_cap(site: tuple[HostileSite, str]) -> None:
    with SafeClient(timeout=5, max_bytes=64 * 1024) as client, pytest.raises(Refused) as err:
        fetch_card(f"{site[1]}/endless", client=client, now=int(time.time()))
    assert err.value.code == "too-large"


def test_black_hole_ends_at_the_deadline_and_reports_what_was_not_reached(
        site: tuple[HostileSite, str]) -> None:
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as err:
        fetch(site[1], "blackhole", timeout=1.0)
    assert time.monotonic() - started < 15, "ended by the 1 s deadline (the hole holds 30 s)"
    skipped = [s["url"] for s in err.value.data["skipped"]]
    assert skipped == [f"{site[1]}/blackhole/.well-known/agent-card.sig.json"]


def test_unreachable_is_exit_3() -> None:
    with refused_origin() as closed:
        result = CliRunner().invoke(app, ["card", "fetch", closed, "--json", "--timeout", "2"])
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["error"] == "unreachable"


def test_contact_and_org_refusals_shown_beside_a_fine_card(
        site: tuple[HostileSite, str]) -> None:
    for name, part, code in (("grant-other", "contact", "grant-for-other-did"),
                             ("grant-expired", "contact", "expired"),
                             ("org-other", "org", "membership-for-other-agent")):
        check = fetch(site[1], name)
        assert check.ok, name
        verdict = getattr(check, part)
        assert verdict is not None and verdict.codes() == [code], name


def test_trusted_org_shows_its_trusted_name(site: tuple[HostileSite, str]) -> None:
    hostile, base = site
    TrustList().add(hostile.org_key.did, "Our Partner", 1)
    check = fetch(base, "good")
    assert check.org is not None and check.org.facts["trustedName"] == "Our Partner"
    assert check.org.reasons == ()


def test_pin_conflict_names_both_dids_and_the_forget_command(
        site: tuple[HostileSite, str]) -> None:
    hostile, base = site
    first = fetch(base, "rotating")
    assert first.ok and first.pin == "new"
    old = hostile.did("rotating")
    hostile.rotate("rotating")
    second = fetch(base, "rotating")
    assert not second.ok and second.pin == "conflict"
    detail = second.verdict.errors[0].detail
    assert old in detail and hostile.did("rotating") in detail
    assert f"muretai card forget {base}/rotating" in detail
    runner = CliRunner()
    forgot = runner.invoke(app, ["card", "forget", f"{base}/rotating"])
    assert forgot.exit_code == 0, forgot.output
    assert fetch(base, "rotating").pin == "new"


def test_url_canonical_forms_match() -> None:
    key = SigningKey(b"\x01" * 32)
    base = parse_base_url("https://example.com/support")
    for url in ("HTTPS://Example.COM:443/support/", "https://example.com/support"):
        card = {"did": key.did, "url": url}
        assert judge_card(base, card, signed(key, card, 100), now=100).ok
    wrongs: tuple[str | int, ...] = ("https://example.com/sales", "https://example.com",
                                     "http://example.com/support",
                                     "https://example.com:8443/support", 42)
    for wrong in wrongs:
        other: dict[str, Any] = {"did": key.did, "url": wrong}
        check = judge_card(base, other, signed(key, other, 100), now=100)
        assert check.verdict.codes() == ["card-url-mismatch"], wrong


def signed(key: SigningKey, card: dict[str, Any], ts: int) -> EnvelopeResult:
    return EnvelopeResult.signed(sign_card_envelope(key, card, ts))


def test_envelope_result_is_one_of_three() -> None:
    from muretai_cli.errors import InputError
    from muretai_cli.verdict import error

    with pytest.raises(InputError):
        EnvelopeResult(envelope={"v": 1}, unsigned_why="no")
    with pytest.raises(InputError):
        EnvelopeResult(refusal=error("x", "y"), unsigned_why="no")
    assert EnvelopeResult.unsigned("HTTP 404").envelope is None


def test_envelope_freshness_bounds() -> None:
    key = SigningKey(b"\x02" * 32)
    base = parse_base_url("https://example.com")
    card = {"did": key.did, "url": "https://example.com"}
    now = 1_000_000
    for ts, codes, ok in ((now - 6 * 3600, [], True),
                          (now - 6 * 3600 - 1, ["stale-envelope"], True),
                          (now + 300, [], True), (now + 301, ["envelope-from-the-future"], False)):
        check = judge_card(base, card, signed(key, card, ts), now=now)
        assert check.ok is ok and check.verdict.codes() == codes, ts


def test_plain_http_site_refused_before_dialling() -> None:
    with SafeClient(timeout=1) as client, pytest.raises(InputError) as err:
        fetch_card("http://example.com", client=client, now=0)
    assert err.value.code == "bad-url"


def test_cli_card_fetch_json_and_text(site: tuple[HostileSite, str]) -> None:
    hostile, base = site
    runner = CliRunner()
    out = runner.invoke(app, ["card", "fetch", f"{base}/good", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert next(iter(doc)) == "ok" and doc["did"] == hostile.did("good")
    refused = runner.invoke(app, ["card", "fetch", f"{base}/forged-env"])
    assert refused.exit_code == 1 and "envelope-bad-signature" in refused.stdout
    unsigned = runner.invoke(app, ["card", "fetch", f"{base}/unsigned", "--require-signed"])
    assert unsigned.exit_code == 1
    pins = runner.invoke(app, ["card", "pins", "--json"])
    assert json.loads(pins.stdout)["pins"][0]["did"] == hostile.did("good")
    black = runner.invoke(app, ["card", "fetch", f"{base}/blackhole", "--timeout", "1"])
    assert black.exit_code == 5


def test_no_fallback_to_agent_json_except_on_404(site: tuple[HostileSite, str]) -> None:
    hostile, base = site
    from muretai_cli.errors import PeerRefused

    with pytest.raises(PeerRefused) as err:
        fetch(base, "card-500")
    assert err.value.data["status"] == 500
    assert "/card-500/.well-known/agent.json" not in hostile.gets
    out = CliRunner().invoke(app, ["card", "fetch", f"{base}/card-500"])
    assert out.exit_code == 4


def test_offline_handoff_check_imports_no_network_stack(tmp_path: Any) -> None:
    import subprocess
    import sys

    key = SigningKey(b"\x09" * 32)
    card = {"did": key.did, "url": "https://support.example.com"}
    (tmp_path / "card.json").write_text(json.dumps(sign_card_envelope(key, card, 1000)))
    (tmp_path / "r.json").write_text(json.dumps(
        {"_meta": {"handoff": {"v": 1, "next": [{"kind": "dm", "to": key.did}]}}}))
    code = (
        "import sys\n"
        "from muretai_cli.cli import app\n"
        "try:\n"
        f"    app(['handoff', 'check', {str(tmp_path / 'r.json')!r}, '--origin',\n"
        f"         'https://support.example.com', '--offline', '--card',\n"
        f"         {str(tmp_path / 'card.json')!r}, '--now', '1000'])\n"
        "except SystemExit as e:\n"
        "    code = e.code\n"
        "print('EXIT', code, sorted(m for m in ('httpx', 'uvicorn', 'starlette', 'sqlite3')\n"
        "                           if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.stdout.strip().splitlines()[-1] == "EXIT 0 []", out.stdout + out.stderr
