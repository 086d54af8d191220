"""Relayed invite claims (issue 22 §17, the claims half).

- A claim sealed as the bare claim object (the shape of the seam's ``reject.claim``
  vectors' inputs) is taken like the JSON-RPC ``onboard/claim`` request; it was refused
  ``not-jsonrpc-2.0``.
- A joiner claiming again a one-use nonce it spent, now naming another relay or
  ``enc_pub``, is reported under ``refused`` (``reclaim-addresses-differ``), the contact kept
  as it was; it was reported ``joined``. A plain retry (the same addresses) is still
  ``joined``, not a new contact.

A real relay (uvicorn on 127.0.0.1), real ``invite create``, ``join`` and ``turn-check``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.artifacts.invite import build_claim, verify_invite
from muretai_cli.seam import SigningKey, canonical_bytes, seal_box
from tests.cli_helpers import run
from tests.relay_helpers import LiveRelay, deposit_body, live_relay, relay_identities


def _j(*args: str) -> dict[str, Any]:
    out = run(*args, "--json")
    assert out.stdout, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def _setup(relay: LiveRelay) -> tuple[dict[str, SigningKey], dict[str, Any]]:
    keys = relay_identities(relay, "ines", "jo")
    return keys, _j("invite", "create", "--as", "ines", "--uses", "1")


def _deposit(relay: LiveRelay, keys: dict[str, SigningKey], doc: dict[str, Any]) -> None:
    blob = seal_box(keys["jo"], keys["ines"].enc_pub, canonical_bytes(doc), ad=b"")
    answer = relay.post("send", deposit_body(keys["jo"], keys["ines"], blob=blob))
    assert answer.status_code == 200, answer.text


def _claim(keys: dict[str, SigningKey], made: dict[str, Any], **sides: Any) -> dict[str, Any]:
    invite = verify_invite(made["invite"], now=int(time.time()))
    return build_claim(keys["jo"], invite=invite, name="Jo", now=int(time.time()), **sides)


@pytest.mark.parametrize("framing", ["bare", "jsonrpc"])
def test_a_relayed_claim_is_taken_in_either_framing(tmp_path: Path, framing: str) -> None:
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        keys, made = _setup(relay)
        claim = _claim(keys, made, enc_pub=keys["jo"].enc_pub, relay=relay.url)
        _deposit(relay, keys, claim if framing == "bare" else
                 {"jsonrpc": "2.0", "id": 1, "method": "onboard/claim", "params": claim})
        drained = _j("op", "--as", "ines", "turn-check")
    assert drained["refused"] == []
    assert [(e["from"], e["name"], e["newContact"]) for e in drained["joined"]] == [
        (keys["jo"].did, "Jo", True)]


@pytest.mark.parametrize("change", ["relay", "enc_pub"])
def test_a_reclaim_naming_other_addresses_is_refused(tmp_path: Path, change: str) -> None:
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        keys, made = _setup(relay)
        assert run("join", made["text"], "--as", "jo", "--name", "Jo").exit_code == 0
        first = _j("op", "--as", "ines", "turn-check")
        assert [e["newContact"] for e in first["joined"]] == [True]
        # a plain retry of the join (the same addresses): still joined, nothing new
        assert run("join", made["text"], "--as", "jo", "--name", "Jo").exit_code == 0
        retry = _j("op", "--as", "ines", "turn-check")
        assert [e["newContact"] for e in retry["joined"]] == [False] and retry["refused"] == []
        if change == "relay":  # jo's relay is another one now: join says so in its claim
            assert run("id", "relay", "jo", "https://relay.elsewhere.example").exit_code == 0
            assert run("join", made["text"], "--as", "jo", "--name", "Jo").exit_code == 0
        else:
            _deposit(relay, keys, {"jsonrpc": "2.0", "id": 1, "method": "onboard/claim",
                                   "params": _claim(keys, made, enc_pub="ee" * 32,
                                                    relay=relay.url)})
        drained = _j("op", "--as", "ines", "turn-check")
        contacts = _j("invite", "contacts", "--as", "ines")["contacts"]
    assert drained["joined"] == []
    assert [(r["from"], r["reason"]["code"]) for r in drained["refused"]] == [
        (keys["jo"].did, "reclaim-addresses-differ")]
    assert [(c["relay"], c["encPub"]) for c in contacts] == [(relay.url, keys["jo"].enc_pub)]
