"""introduce/propose, introduce/respond and the revocation list through real doors under
uvicorn: a proposal held for review at the target's door, the target's answer recorded at
the introducer's door, a revoked credential reported revoked by the checker fetching the
issuer's list, a tampered list refused, an unreachable issuer behaving as docs/trust.md says."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from muretai_cli.artifacts.introduction import mint_introduction
from muretai_cli.artifacts.vouch import Reach, mint_proposal, mint_revocations
from muretai_cli.inbox.proposals import ProposalBook, VouchBook, responses_for
from muretai_cli.inbox.revocations import RevocationChecker
from muretai_cli.net import SafeClient
from muretai_cli.seam import SigningKey
from muretai_cli.urls import REVOCATIONS_PATH
from muretai_cli.visit.vouch import Peer, propose, respond
from tests.door_helpers import Live, code_of, live_door, reason_of
from tests.intro_cases import signatures_checked
from tests.servers import refused_origin, serve_asgi

CAROL = SigningKey(bytes(range(1, 33)))


def client_for(seconds: float, max_bytes: int) -> SafeClient:
    return SafeClient(timeout=seconds, max_bytes=max_bytes)


@pytest.fixture
def doors() -> Iterator[tuple[Live, Live]]:
    with live_door("quarantine", name="alice") as alice, \
            live_door("quarantine", name="bob") as bob:
        yield alice, bob


def credential(alice: Live, bob: Live, now: int) -> dict[str, Any]:
    return mint_introduction(alice.key, subject=CAROL.did, to=bob.did, now=now,
                             issuer_endpoint=alice.base)


def test_a_proposal_is_held_and_the_answer_recorded_at_the_introducer(
        doors: tuple[Live, Live]) -> None:
    alice, bob = doors
    now = int(time.time())
    vc = credential(alice, bob, now)
    mine = alice.store()
    try:
        out = propose(alice.key, vc, target=Peer(bob.did, bob.base), store=mine,
                      client_for=client_for, now=now, note="she ships rust",
                      reach=Reach(url=alice.base))
        assert (out["state"], out["channel"]) == ("held", "door")
        theirs = bob.store()
        try:
            vouches = VouchBook(theirs, bob.did)
            assert vouches.proposal(vc["id"]) == "pending"
            [row] = ProposalBook(theirs.db).rows()
            assert (row.introducer, row.subject, row.note) == (alice.did, CAROL.did,
                                                              "she ships rust")
            row = ProposalBook(theirs.db).decide(row.id, "approved", now)
            assert vouches.proposal(vc["id"]) == "approved"
        finally:
            theirs.close()
        told = respond(bob.key, row, "approved", client_for=client_for, now=now)
        assert told["recorded"] is True and told["channel"] == "door"
        assert responses_for(mine) == {vc["id"]: "approved"}
    finally:
        mine.close()


def test_the_door_refuses_a_forged_proposal_and_one_for_another_target(
        doors: tuple[Live, Live]) -> None:
    alice, bob = doors
    now = int(time.time())
    good = mint_proposal(alice.key, credential(alice, bob, now), to=bob.did, now=now)
    forged = {**good, "note": "added after signing"}
    elsewhere = mint_proposal(alice.key, mint_introduction(alice.key, subject=CAROL.did,
                                                           to=alice.did, now=now),
                              to=alice.did, now=now)
    for params, code, reason in ((forged, -32001, "bad-signature"),
                                 (elsewhere, -32003, "proposal-not-for-me")):
        doc = bob.rpc({"jsonrpc": "2.0", "id": 1, "method": "introduce/propose",
                       "params": params})
        assert (code_of(doc), reason_of(doc)) == (code, reason)
    theirs = bob.store()
    try:
        assert ProposalBook(theirs.db).rows() == []
    finally:
        theirs.close()


def test_a_revoked_credential_is_reported_revoked_from_the_issuers_door(
        doors: tuple[Live, Live]) -> None:
    alice, bob = doors
    now = int(time.time())
    vc = credential(alice, bob, now)
    card = alice.get(alice.base + "/.well-known/agent-card.json").json()
    assert card["muretai"]["revocations"] == alice.base + REVOCATIONS_PATH
    assert "introduce/propose" in card["muretai"]["methods"]
    mine = alice.store()
    try:
        ProposalBook(mine.db).revoke(vc["id"], now)
    finally:
        mine.close()
    checker = RevocationChecker(client_for)
    assert checker.revoked(alice.did, vc["id"], vc["issuerEndpoint"])
    assert not checker.revoked(alice.did, "urn:uuid:another", vc["issuerEndpoint"])
    assert checker.fetches == 1  # the second answer came from the cache
    # the gate's book: another issuer's credential goes to the checker
    theirs = bob.store()
    try:
        assert VouchBook(theirs, bob.did, checker).revoked(alice.did, vc["id"], alice.base)
    finally:
        theirs.close()


def _serving(body: bytes) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        found = scope["path"].endswith(REVOCATIONS_PATH)
        await send({"type": "http.response.start", "status": 200 if found else 404,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body if found else b"{}"})

    return app


def test_a_tampered_list_is_no_list() -> None:
    issuer = SigningKey(bytes(range(7, 39)))
    signed = mint_revocations(issuer, ["urn:a"], now=int(time.time()))
    tampered = {**signed, "revoked": ["urn:a", "urn:b"]}
    seen: list[tuple[str, str]] = []
    with serve_asgi(_serving(json.dumps(tampered).encode())) as url:
        checker = RevocationChecker(client_for, on_problem=lambda i, r: seen.append((i, r)))
        assert not checker.revoked(issuer.did, "urn:b", url)
        assert not checker.revoked(issuer.did, "urn:a", url)  # a forged list says nothing
    assert seen == [(issuer.did, "bad-signature")]
    assert checker.problems == {issuer.did: "bad-signature"}


def test_an_unreachable_issuer_is_not_revoked_but_reported_and_a_seen_list_is_kept() -> None:
    issuer = SigningKey(bytes(range(8, 40)))
    checker = RevocationChecker(client_for, max_age=0)  # every call fetches again
    with refused_origin() as closed:
        assert not checker.revoked(issuer.did, "urn:a", closed)
        assert checker.problems[issuer.did] == "unreachable"
        signed = mint_revocations(issuer, ["urn:a"], now=int(time.time()))
        with serve_asgi(_serving(json.dumps(signed).encode())) as url:
            assert checker.revoked(issuer.did, "urn:a", url)
        checker.problems.clear()
        assert checker.revoked(issuer.did, "urn:a", closed)  # the outage forgets nothing
        assert checker.problems[issuer.did] == "unreachable"


def test_proposals_count_against_the_introducer_s_rate() -> None:
    with live_door("quarantine", name="bob", rate_per_sender=2) as bob:
        alice = SigningKey(bytes(range(5, 37)))
        now = int(time.time())
        answers = [bob.rpc({"jsonrpc": "2.0", "id": n, "method": "introduce/propose",
                            "params": mint_proposal(alice, mint_introduction(
                                alice, subject=CAROL.did, to=bob.did, now=now),
                                to=bob.did, now=now)}) for n in range(3)]
    assert [code_of(a) for a in answers] == [None, None, -32004]
    assert reason_of(answers[2]) == "rate-limited"


def test_a_proposed_credential_carried_again_is_not_solved_twice() -> None:
    """The door verified the credential when its introducer proposed it: the subject's first
    contact carrying the very same bytes opens the door without solving its signatures
    again; a copy changed under the same id is solved, and refused."""
    from muretai_cli.artifacts.introduction import mint_request
    from muretai_cli.artifacts.message import build_message, build_message_send
    from muretai_cli.seam import did_from_public, sign_envelope

    def first_contact(vc: dict[str, Any], text: str) -> dict[str, Any]:
        msg = build_message(sign_envelope(CAROL, to=bob.did, text=text, timestamp=now))
        msg["metadata"]["vc"] = vc
        return bob.rpc(build_message_send(msg, 1))

    alice = SigningKey.generate()
    with live_door("introduced", name="bob") as bob:
        now = int(time.time())
        theirs = bob.store()
        try:
            theirs.set_sender(alice.did, "allowed", now)  # a contact of bob's
            vc = mint_introduction(alice, subject=CAROL.did, to=bob.did, now=now,
                                   request=mint_request(CAROL, introducer=alice.did,
                                                        target=bob.did, now=now - 60))
            answer = bob.rpc({"jsonrpc": "2.0", "id": 1, "method": "introduce/propose",
                              "params": mint_proposal(alice, vc, to=bob.did, now=now)})
            assert answer["result"]["state"] == "held", answer
            changed = json.loads(json.dumps(vc))
            changed["credentialSubject"]["expertise"] = ["anything she likes"]
            # the credential's equations (the verifier's calls, not the message's)
            with signatures_checked(messages=False) as solved:
                refused = first_contact(changed, "hello, bob")
                assert reason_of(refused) == "introduction-bad-signature", refused
                assert [did_from_public(raw) for raw, _ in solved] == [alice.did]
                solved.clear()
                assert "result" in first_contact(vc, "hello again, bob")
            assert solved == []  # neither the issuer's nor the embedded request's, again
            assert theirs.introduced_by(CAROL.did) == alice.did
        finally:
            theirs.close()
