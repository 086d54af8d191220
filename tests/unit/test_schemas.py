"""JSON Schemas: every valid artifact (golden vectors, our own signers, the examples) passes,
and each mutated one fails — with the jsonschema package, as another CI would use them."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from muretai_cli.artifacts.grant import mint_grant
from muretai_cli.artifacts.invite import build_claim, mint_invite, verify_invite
from muretai_cli.artifacts.org import attest_member
from muretai_cli.schemas import load, names
from muretai_cli.seam import SigningKey, b64encode, sign_card_envelope, sign_relay_send
from tests.cli_helpers import run
from tests.repo_files import ROOT, cases, load_vectors

KEY = SigningKey(bytes(range(32)))
OTHER = SigningKey(bytes(range(1, 33)))
NOW = 1_800_000_000
EXPECTED = {"card-envelope", "claim", "contact-grant", "handoff-envelope", "introduction", "invite",
            "intro-proposal", "intro-response", "intro-revocations", "org-membership", "relay-deposit", "tool-result-gate",
            "tool-result-needs-information", "tool-result-transcript"}


def _ok(name: str, doc: Any) -> None:
    errors = list(Draft202012Validator(load(name)).iter_errors(doc))
    assert not errors, (name, [e.message for e in errors])


def _bad(name: str, doc: Any, why: str) -> None:
    assert not Draft202012Validator(load(name)).is_valid(doc), (name, why)


def _mutate(doc: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    change(out)
    return out


def test_the_schemas_are_valid_and_all_there() -> None:
    assert set(names()) == EXPECTED
    for name in names():
        Draft202012Validator.check_schema(load(name))
    listed = run("schema", "list")
    assert listed.exit_code == 0 and len(listed.stdout.splitlines()) == len(EXPECTED)
    shown = run("schema", "show", "contact-grant")
    assert json.loads(shown.stdout) == load("contact-grant")
    assert run("schema", "show", "nope").exit_code == 2


def _wrong_typ(d: dict[str, Any]) -> None:
    d["typ"] = "muretai/contact-grant/2"


def test_grant_org_card_envelope() -> None:
    grant = mint_grant(KEY, uses=2, now=NOW, purpose="support")
    _ok("contact-grant", grant)
    _bad("contact-grant", _mutate(grant, lambda d: d.update(uses=0)), "uses below 1")
    _bad("contact-grant", _mutate(grant, _wrong_typ), "typ")
    _bad("contact-grant", _mutate(grant, lambda d: d.update(exp=d["exp"] + 0.5)), "not an integer")
    _bad("contact-grant", _mutate(grant, lambda d: d.pop("sig")), "no sig")
    member = attest_member(KEY, member_did=OTHER.did, org_name="Acme", now=NOW)
    _ok("org-membership", member)
    _bad("org-membership", _mutate(member, lambda d: d.update(agentDid="did:web:x")), "did")
    for env in (sign_card_envelope(KEY, {"name": "x", "url": "https://a.example"}, NOW),
                *({"v": 1, "typ": "agentcard", "card": c["card"], "ts": c["ts"], "sig": c["sig"]}
                  for c in cases(load_vectors("wire_vectors.json")["cardpub"], "cardpub"))):
        _ok("card-envelope", env)
        _bad("card-envelope", _mutate(env, lambda d: d.update(ts=d["ts"] + 0.5)), "fractional ts")
        _bad("card-envelope", _mutate(env, lambda d: d["card"].pop("did")), "no did")
        _bad("card-envelope", _mutate(env, lambda d: d.update(sig=d["sig"][:-4])), "short sig")


def test_invite_claim_relay_deposit() -> None:
    vectors = load_vectors("wire_vectors.json")
    invites = [{**c["card"], "sig": c["sig"]} for c in cases(vectors["invite"], "invite")]
    invites.append(mint_invite(KEY, name="shop", exp=NOW + 3600, url="https://shop.example"))
    for invite in invites:
        _ok("invite", invite)
        _bad("invite", _mutate(invite, lambda d: d.update(exp=NOW)), "exp is an ISO string")
        _bad("invite", _mutate(invite, lambda d: d.pop("nonce")), "no nonce")
    claim = build_claim(OTHER, invite=verify_invite(invites[-1], now=NOW), name="me", now=NOW)
    _ok("claim", claim)
    _bad("claim", _mutate(claim, lambda d: d["message"].update(text="hello")), "text")
    _bad("claim", _mutate(claim, lambda d: d.update(method="message/send")), "method")
    blob = b64encode(bytes(60))
    deposit = {"to": KEY.did, "from": OTHER.did, "from_enc": "ab" * 32, "id": "d-1",
               "blob": blob, "sig": sign_relay_send(OTHER, to=KEY.did, deposit_id="d-1",
                                                    blob=blob)}
    _ok("relay-deposit", deposit)
    _bad("relay-deposit", _mutate(deposit, lambda d: d.update(blob="not base64!")), "blob")
    _bad("relay-deposit", _mutate(deposit, lambda d: d.pop("from_enc")), "from_enc")


def _lint(doc: dict[str, Any], tmp_path: Path) -> int:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    return run("conventions", "lint", str(path)).exit_code


def test_tool_result_shapes_agree_with_the_lint(tmp_path: Path) -> None:
    support = json.loads((ROOT / "examples/ci/tool-results/support.json").read_text())
    handoff = support["_meta"]["handoff"]
    _ok("handoff-envelope", handoff)
    _bad("handoff-envelope", _mutate(handoff, lambda d: d.update(v=2)), "v")
    _bad("handoff-envelope", _mutate(handoff, lambda d: d["next"][0].pop("to")), "dm to")
    _bad("handoff-envelope", _mutate(handoff, lambda d: d["next"][0].update(kind="x")), "kind")
    gate = {"ok": False, "needsHumanConfirmation": True, "requestId": "req-1",
            "origin": "https://tickets.example",
            "message": "Confirm the booking for Friday?",
            "agentHint": "Wait for the person; do not retry."}
    needs = {"ok": False, "needsInformation": True, "question": "Which date?",
             "message": "The date is missing.", "origin": "https://tickets.example"}
    transcript = {"ok": True, "entries": [{"origin": "human-direct", "text": "hi"},
                                          {"origin": "site-agent", "text": "hello"}]}
    for name, doc, broken in (
            ("tool-result-gate", gate, lambda d: d.pop("requestId")),
            ("tool-result-gate", gate, lambda d: d.update(ok=True)),
            ("tool-result-needs-information", needs, lambda d: d.pop("question")),
            ("tool-result-transcript", transcript,
             lambda d: d["entries"][0].update(origin="https://tickets.example"))):
        _ok(name, doc)
        assert _lint({"structuredContent": doc}, tmp_path) == 0, name
        mutated = _mutate(doc, broken)
        _bad(name, mutated, name)
        assert _lint({"structuredContent": mutated}, tmp_path) == 1, (name, mutated)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_schema_refuses_a_non_object(name: str) -> None:
    _bad(name, [], "an array")
