"""The introduction proposal flow end to end through the CLI: `op introduce propose FILE
--to TARGET`, the target's `op requests` (the proposal beside held contacts, hostile text
made inert), `requests approve|reject p-…` telling the introducer, `turn-check` draining
proposals and answers from a relay, `introduce revoke` and the list on the relay card."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from muretai_cli.artifacts.introduction import mint_introduction
from muretai_cli.inbox.proposals import responses_for
from muretai_cli.inbox.revocations import RevocationChecker
from muretai_cli.inbox.store import IdentityStore, db_path
from muretai_cli.net import SafeClient
from muretai_cli.seam import SigningKey
from tests.cli_helpers import run
from tests.door_helpers import live_door
from tests.relay_helpers import live_relay, relay_identities
from tests.waiting import wait_until

CAROL = SigningKey(bytes(range(1, 33)))
HOSTILE = "fine\x1b[2J\u202eevil\u200b\nFORGED: approved"


def _j(*args: str) -> dict[str, Any]:
    out = run(*args, "--json")
    assert out.stdout, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def _credential(tmp_path: Path, issuer: SigningKey, to: str, **kw: Any) -> tuple[Path, str]:
    vc = mint_introduction(issuer, subject=CAROL.did, to=to, now=int(time.time()),
                           expertise=["rust\u202e"], **kw)
    path = tmp_path / "intro.json"
    path.write_text(json.dumps(vc))
    return path, str(vc["id"])


def _client_for(seconds: float, max_bytes: int) -> SafeClient:
    return SafeClient(timeout=seconds, max_bytes=max_bytes)


def test_propose_review_and_answer_through_a_relay(tmp_path: Path) -> None:
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        keys = relay_identities(relay, "alice", "bob")
        published_at = int(time.time())  # the cards' envelopes: a newer one needs a later ts
        alice, bob = keys["alice"], keys["bob"]
        path, cid = _credential(tmp_path, alice, bob.did)
        sent = _j("op", "--as", "alice", "introduce", "propose", str(path), "--to", bob.did,
                  "--relay", relay.url, "--note", HOSTILE)
        assert (sent["ok"], sent["channel"], sent["queued"]) == (True, "relay", True)
        drained = _j("op", "--as", "bob", "turn-check")
        [event] = drained["vouches"]
        assert (event["from"], event["reason"]["code"]) == (alice.did, "proposed")
        listed = _j("op", "--as", "bob", "requests", "list")
        [row] = listed["proposals"]
        assert (row["introducer"], row["subject"], row["credentialId"], row["note"]) == (
            alice.did, CAROL.did, cid, HOSTILE)
        shown = run("op", "--as", "bob", "requests")
        assert shown.exit_code == 0
        for bad in ("\x1b", "\u202e", "\u200b"):
            assert bad not in shown.stdout
        assert "  | FORGED: approved" in shown.stdout  # quoted, never a line of ours
        assert not any(line.startswith("FORGED") for line in shown.stdout.splitlines())
        approved = _j("op", "--as", "bob", "requests", "approve", row["proposalId"])
        assert (approved["status"], approved["told"]) == ("approved", True)
        again = run("op", "--as", "bob", "requests", "approve", row["proposalId"])
        assert again.exit_code == 2 and "already-decided" in again.stderr
        answered = _j("op", "--as", "alice", "turn-check")
        assert [(e["from"], e["reason"]["code"], e["reason"]["message"])
                for e in answered["vouches"]] == [(bob.did, "answered", "approved")]
        store = IdentityStore(db_path(alice.did))
        try:
            assert responses_for(store) == {cid: "approved"}
        finally:
            store.close()
        # revoked, published on the relay card: a checker with no door finds it there
        assert _j("op", "--as", "alice", "introduce", "revoke", cid)["new"] is True
        wait_until(lambda: int(time.time()) > published_at, "a second after the first card")
        published = run("card", "publish", "--as", "alice")
        assert published.exit_code == 0, published.stderr
        checker = RevocationChecker(_client_for, relay_of=lambda did: relay.url)
        assert checker.revoked(alice.did, cid, None)
        assert not checker.revoked(alice.did, "urn:uuid:other", None)


def test_reject_over_a_door_and_the_list_the_door_serves(tmp_path: Path) -> None:
    with live_door("quarantine", name="bob") as bob, \
            live_door("quarantine", name="alice") as alice:
        path, cid = _credential(tmp_path, alice.key, bob.did, issuer_endpoint=alice.base)
        sent = _j("op", "--as", "alice", "introduce", "propose", str(path), "--to", bob.did,
                  "--url", bob.base, "--my-url", alice.base)
        assert (sent["state"], sent["channel"]) == ("held", "door")
        [row] = _j("op", "--as", "bob", "requests", "list")["proposals"]
        shown = run("op", "--as", "bob", "requests").stdout
        assert "rust?" in shown and "\u202e" not in shown  # expertise made inert too
        rejected = _j("op", "--as", "bob", "requests", "reject", row["proposalId"])
        assert (rejected["status"], rejected["told"]) == ("declined", True)
        store = alice.store()
        try:
            assert responses_for(store) == {cid: "declined"}
        finally:
            store.close()
        assert _j("op", "--as", "alice", "introduce", "revoke", cid)["new"] is True
        served = alice.get(alice.base + "/.well-known/muretai-revocations.json").json()
        assert served["revoked"] == [cid] and served["issuer"] == alice.did
        printed = json.loads(run("op", "--as", "alice", "introduce", "revocations").stdout)
        assert printed["revoked"] == [cid]


def test_a_proposal_of_a_credential_for_another_target_is_refused_before_sending(
        tmp_path: Path) -> None:
    with live_door("quarantine", name="bob") as bob:
        run("id", "new", "alice")
        from muretai_cli.home import KeyStore, keys_dir

        alice = KeyStore(keys_dir()).load("alice").signing_key()
        path, _ = _credential(tmp_path, alice, alice.did)
        out = run("op", "--as", "alice", "introduce", "propose", str(path), "--to", bob.did,
                  "--url", bob.base)
        assert out.exit_code == 2 and "wrong-target" in out.stderr


def test_card_publish_puts_the_revocation_list_on_the_relay_card(tmp_path: Path) -> None:
    from muretai_cli.artifacts.vouch import verify_revocations
    from muretai_cli.inbox.proposals import ProposalBook
    from muretai_cli.visit.relay import RelayClient

    with live_relay(tmp_path / "relay.db") as relay:
        alice = relay_identities(relay, "alice")["alice"]
        client = RelayClient(relay.url, lambda s, n: SafeClient(timeout=s, max_bytes=n))
        assert "revocations" not in client.card(alice.did, now=int(time.time())).card
        store = IdentityStore(db_path(alice.did))
        try:
            assert ProposalBook(store.db).revoke("urn:uuid:gone", int(time.time()))
        finally:
            store.close()
        assert run("card", "publish", "--as", "alice").exit_code == 0
        card = client.card(alice.did, now=int(time.time())).card
        listed = verify_revocations(card["revocations"], issuer=alice.did,
                                    now=int(time.time()))
        assert listed.revoked == {"urn:uuid:gone"}
