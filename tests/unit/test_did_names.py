"""Where a DID is expected, a name this machine knows (an identity, a trusted org) works too."""

from __future__ import annotations

import json
from pathlib import Path

from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run


def test_an_identity_name_stands_for_its_did() -> None:
    bob = new_identity("bob")
    new_identity("alice")
    result = run("sign", "message", "hi", "--as", "alice", "--to", "bob")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["params"]["message"]["metadata"]["to"] == bob
    assert f"--to bob = {bob} (your identity bob)" in result.stderr, "the resolution is said"
    signed = result.stdout
    verified = run("verify", "message", "-", "--to", "bob", input=signed)
    assert verified.exit_code == 0, verified.output


def test_a_trusted_org_name_stands_for_its_did() -> None:
    org = SigningKey(b"\x07" * 32).did
    assert run("org", "trust", org, "--name", "Acme Stores").exit_code == 0
    new_identity("alice")
    result = run("sign", "message", "hi", "--as", "alice", "--to", "acme stores")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["params"]["message"]["metadata"]["to"] == org
    assert "(trusted org Acme Stores)" in result.stderr


def test_an_unknown_name_is_a_usage_error_naming_the_option() -> None:
    new_identity("alice")
    result = run("sign", "message", "hi", "--as", "alice", "--to", "carol")
    assert result.exit_code == 2
    assert "bad-did" in result.stderr and "--to 'carol'" in result.stderr
    assert "muretai id list" in result.stderr


def test_a_name_for_two_dids_is_refused() -> None:
    bob = new_identity("bob")
    other = SigningKey(b"\x08" * 32).did
    assert other != bob
    assert run("org", "trust", other, "--name", "bob").exit_code == 0
    result = run("verify", "message", "-", "--to", "bob", input="{}")
    assert result.exit_code == 2 and "ambiguous-name" in result.stderr
    assert bob in result.stderr and other in result.stderr


def test_senders_lists_take_names(_isolated_env: Path) -> None:
    bob = new_identity("bob")
    new_identity("door")
    result = run("op", "--as", "door", "senders", "block", "bob", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"ok": True, "did": bob, "status": "blocked"}
    assert run("op", "--as", "door", "senders", "block", "did:key:zBAD").exit_code == 2
