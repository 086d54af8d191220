"""``domain link``, ``verify domain-linkage`` and ``verify request`` through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from muretai_cli.seam import SigningKey, jwk_from_public, sign_request
from tests.cli_helpers import new_identity, run, run_json

NOW = 1_800_000_000


def test_domain_link_then_verify(tmp_path: Path) -> None:
    did = new_identity("alice")
    made = run("domain", "link", "--as", "alice", "--domain", "127.0.0.1:8443", "--days", "1",
               "--now", str(NOW))
    assert made.exit_code == 0, made.stderr
    doc = json.loads(made.stdout)
    token = doc["linked_dids"][0]
    head = json.loads(__import__("base64").urlsafe_b64decode(token.split(".")[0] + "=="))
    assert head == {"alg": "EdDSA", "kid": f"{did}#{did.rsplit(':', 1)[1]}", "typ": "JWT"}
    assert "=" not in token
    path = tmp_path / "did-configuration.json"
    path.write_text(made.stdout)
    code, out = run_json("verify", "domain-linkage", str(path), "--domain", "127.0.0.1:8443",
                         "--did", did, "--now", str(NOW + 60))
    assert code == 0 and out["results"][0]["exp"] == NOW + 86400
    for domain, now, reason in (("127.0.0.1:8444", NOW, "origin-mismatch"),
                                ("127.0.0.1:8443", NOW + 86401, "expired")):
        code, out = run_json("verify", "domain-linkage", str(path), "--domain", domain,
                             "--did", did, "--now", str(now))
        assert code == 1 and out["results"][0]["reasons"][0]["code"] == reason
    other = SigningKey(bytes(32)).did
    code, out = run_json("verify", "domain-linkage", str(path), "--domain", "127.0.0.1:8443",
                         "--did", other, "--now", str(NOW))
    assert code == 1 and out["results"][0]["reasons"][0]["code"] == "not-linked"
    assert run("domain", "link", "--as", "alice", "--domain", "https://x.example").exit_code == 2


def test_verify_request_offline(tmp_path: Path) -> None:
    key = SigningKey(bytes(range(32)))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [jwk_from_public(key.public_bytes)]}))
    good = tmp_path / "good.json"
    headers = sign_request(key, "https://shop.example/x", signature_agent="https://a.example",
                           created=NOW)
    good.write_text(json.dumps({"headers": headers}))
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps({**headers, "Signature-Agent": '"https://evil.example"'}))
    code, out = run_json("verify", "request", str(good), str(tampered), "--authority",
                         "shop.example", "--jwks", str(jwks), "--now", str(NOW + 5))
    assert code == 1
    assert out["results"][0]["ok"] and out["results"][0]["did"] == key.did
    assert out["results"][1]["reasons"][0]["code"] == "bad-signature"
    code, out = run_json("verify", "request", str(good), "--authority", "other.example",
                         "--jwks", str(jwks), "--now", str(NOW + 5))
    assert code == 1
