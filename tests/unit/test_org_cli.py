"""``org attest|trust|list|untrust`` and ``verify org``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from muretai_cli.artifacts.org import attest_member
from muretai_cli.cli import app
from muretai_cli.seam import SigningKey

MEMBER = SigningKey(b"\x21" * 32)
OTHER = SigningKey(b"\x22" * 32)


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=input)


def test_attest_then_verify(tmp_path: Path) -> None:
    org = run("id", "new", "acme").stdout.strip()
    out = run("org", "attest", "--as", "acme", "--member", MEMBER.did, "--name", "Acme",
              "--role", "support", "--expires", "30d")
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["orgDid"] == org and doc["exp"] - doc["iat"] == 30 * 86400
    path = tmp_path / "m.json"
    path.write_text(out.stdout)
    ok = run("verify", "org", str(path), "--agent", MEMBER.did, "--json")
    assert ok.exit_code == 0, ok.output
    item = json.loads(ok.stdout)["results"][0]
    assert item["orgName"] == "Acme" and item["trusted"] is False
    other = run("verify", "org", str(path), "--agent", OTHER.did, "--json")
    assert other.exit_code == 1
    assert json.loads(other.stdout)["results"][0]["reasons"][0]["code"] == \
        "membership-for-other-agent"
    tampered = tmp_path / "t.json"
    tampered.write_text(json.dumps({**doc, "orgName": "Acme Bank"}))
    bad = run("verify", "org", str(tampered), "--agent", MEMBER.did, "--json")
    assert json.loads(bad.stdout)["results"][0]["reasons"][0]["code"] == "bad-signature"


def test_expired_membership_refused(tmp_path: Path) -> None:
    org = SigningKey(b"\x23" * 32)
    doc = attest_member(org, member_did=MEMBER.did, org_name="Old", now=1000, ttl=10)
    out = run("verify", "org", "-", "--agent", MEMBER.did, "--now", "1010", "--json",
              input=json.dumps(doc) + "\n")
    assert out.exit_code == 1
    assert json.loads(out.stdout)["results"][0]["reasons"][0]["code"] == "expired"


def test_trust_list_round_trip(tmp_path: Path) -> None:
    org = SigningKey(b"\x24" * 32)
    assert run("org", "trust", org.did, "--name", "Partner").exit_code == 0
    listed = json.loads(run("org", "list", "--json").stdout)
    assert [o["did"] for o in listed["orgs"]] == [org.did]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(attest_member(org, member_did=MEMBER.did, org_name="Claimed",
                                             now=1000)))
    item = json.loads(run("verify", "org", str(path), "--agent", MEMBER.did, "--json",
                          "--now", "2000").stdout)["results"][0]
    assert item["trusted"] is True and item["trustedName"] == "Partner"
    human = run("verify", "org", str(path), "--agent", MEMBER.did, "--now", "2000").stdout
    assert "'Partner' (trusted" in human and "Claimed" not in human
    assert run("org", "untrust", org.did).exit_code == 0
    human = run("verify", "org", str(path), "--agent", MEMBER.did, "--now", "2000").stdout
    assert "'Claimed' (as claimed by" in human
    assert json.loads(run("org", "list", "--json").stdout)["orgs"] == []
    assert run("org", "untrust", org.did).exit_code == 1
    assert run("org", "trust", "did:key:nonsense", "--name", "x").exit_code == 2


def test_attest_bad_duration_is_usage_error() -> None:
    run("id", "new", "acme")
    out = run("org", "attest", "--as", "acme", "--member", MEMBER.did, "--name", "Acme",
              "--expires", "soon")
    assert out.exit_code == 2
