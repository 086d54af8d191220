"""``muretai sign introduction``, ``sign introduction-request`` and ``verify introduction``,
and the ``introduction`` JSON Schema, as a CI would use them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from muretai_cli.schemas import load
from tests.cli_helpers import new_identity, run, run_json
from tests.intro_recipe import ALICE, BOB, CAROL, NOW, recipe_credential, requested


def _signed(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], Path]:
    for name in ("alice", "bob", "carol"):
        new_identity(name)
    asked = run("sign", "introduction-request", "--as", "carol", "--introducer", "alice",
                "--to", "bob", "--now", str(NOW - 60))
    assert asked.exit_code == 0, asked.stderr
    request = tmp_path / "request.json"
    request.write_text(asked.stdout)
    made = run("sign", "introduction", "--as", "alice", "--subject", "carol", "--to", "bob",
               "--request", str(request), "--now", str(NOW), *extra)
    assert made.exit_code == 0, made.stderr
    path = tmp_path / "vc.json"
    path.write_text(made.stdout)
    return json.loads(made.stdout), path


def test_sign_then_verify_an_introduction(tmp_path: Path) -> None:
    vc, path = _signed(tmp_path, "--expertise", "rust", "--expertise", "sql", "--trust", "0.87",
                       "--valid", "7d")
    assert vc["credentialSubject"]["trustLevelBp"] == 870  # integer basis points, no float
    assert '"trustLevelBp": 870,' in path.read_text()
    assert vc["credentialSubject"]["expertise"] == ["rust", "sql"]
    assert vc["provenance"]["mode"] == "requested"
    code, doc = run_json("verify", "introduction", str(path), "--subject", "carol", "--to", "bob",
                         "--now", str(NOW + 1))
    assert code == 0 and doc["results"][0]["provenance"] == "requested", doc
    assert doc["results"][0]["trustLevelBp"] == 870
    code, doc = run_json("verify", "introduction", str(path), "--subject", "carol", "--to",
                         "alice", "--now", str(NOW + 1))
    assert code == 1 and doc["results"][0]["reasons"][0]["code"] == "wrong-recipient"
    code, doc = run_json("verify", "introduction", str(path), "--subject", "carol", "--to", "bob",
                         "--now", str(NOW + 8 * 86400))
    assert code == 1 and doc["results"][0]["reasons"][0]["code"] == "expired"


def test_sign_introduction_usage_mistakes_exit_2(tmp_path: Path) -> None:
    _signed(tmp_path)
    base = ("sign", "introduction", "--as", "alice", "--subject", "carol", "--to", "bob")
    assert run(*base).exit_code == 2  # neither --proactive nor --request
    assert run(*base, "--proactive", "--request", str(tmp_path / "request.json")).exit_code == 2
    bad = run(*base, "--proactive", "--trust", "0.5005")
    assert bad.exit_code == 2 and "bad-trust" in bad.stderr
    proactive = run(*base, "--proactive")
    assert proactive.exit_code == 0 and json.loads(proactive.stdout)["provenance"] == {
        "mode": "proactive"}


def test_the_introduction_schema() -> None:
    schema = Draft202012Validator(load("introduction"))
    ours = requested()
    proactive = recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW, request=None)
    for good in (ours, proactive):
        assert not list(schema.iter_errors(good))
    float_trust = copy.deepcopy(ours)
    float_trust["credentialSubject"]["trustLevelBp"] = 0.5
    smuggled = copy.deepcopy(ours)
    smuggled["provenance"]["mode"] = "proactive"
    unknown = copy.deepcopy(proactive)
    unknown["provenance"]["mode"] = "gifted"
    unpadded = copy.deepcopy(ours)
    unpadded["proof"]["jws"] = unpadded["proof"]["jws"].rstrip("=")
    for bad in (float_trust, smuggled, unknown, unpadded):
        assert not schema.is_valid(bad)
    listed = run("schema", "list")
    assert "introduction" in listed.stdout
