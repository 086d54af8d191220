"""Policies, grants and the owner's decisions, against a running door."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx

from muretai_cli.artifacts.grant import mint_grant, redeem_params
from muretai_cli.seam import SigningKey
from tests.cli_helpers import run, run_json
from tests.door_helpers import Live, code_of, live_door, local_door, send_request


def issue(uses: int = 5, expires: str = "1d") -> dict[str, Any]:
    result = run("contact", "issue", "--as", "door", "--uses", str(uses), "--expires", expires)
    assert result.exit_code == 0, result.stderr
    grant: dict[str, Any] = json.loads(result.stdout)
    return grant


def redeem(door: Live, who: SigningKey, grant: dict[str, Any], *, now: int | None = None
           ) -> dict[str, Any]:
    params = redeem_params(who, grant, now=int(time.time()) if now is None else now)
    return door.rpc({"jsonrpc": "2.0", "id": 9, "method": "contact/redeem", "params": params})


def grant_state(door: Live, grant_id: str) -> tuple[int, int]:
    store = door.store()
    try:
        row = store.grant(grant_id)
        count = store.db.one("SELECT COUNT(*) FROM connections WHERE grant_id=?", (grant_id,))
        assert count is not None
        conns = count[0]
    finally:
        store.close()
    assert row is not None
    return row.used, conns


def test_closed_needs_a_redeemed_grant() -> None:
    with local_door("closed") as door:
        alice = SigningKey.generate()
        doc = door.rpc(send_request(alice, door.did))
        assert code_of(doc) == -32010 and doc["_status"] == 200
        grant = issue(uses=2)
        ok = redeem(door, alice, grant)
        assert ok["result"]["ok"] is True and ok["result"]["grantId"] == grant["id"]
        assert ok["result"]["expires"] == grant["exp"]
        assert "result" in door.rpc(send_request(alice, door.did, "now I may"))
        # the same sender redeeming again is idempotent: no extra use
        assert redeem(door, alice, grant)["result"]["ok"] is True
        assert grant_state(door, grant["id"]) == (1, 1)
        # revoking the grant closes that sender's only connection: -32011
        assert run("contact", "revoke", "--as", "door", grant["id"]).exit_code == 0
        assert code_of(door.rpc(send_request(alice, door.did))) == -32011


def test_grant_failures_change_nothing() -> None:
    with local_door("closed") as door:
        alice, bob = SigningKey.generate(), SigningKey.generate()
        one = issue(uses=1)
        assert "result" in redeem(door, alice, one)
        cases: list[tuple[str, dict[str, Any]]] = [("exhausted", one)]
        revoked = issue(uses=3)
        run("contact", "revoke", "--as", "door", revoked["id"])
        cases.append(("revoked", revoked))
        cases.append(("foreign", mint_grant(SigningKey.generate(), uses=3, now=int(time.time()))))
        forged = dict(issue(uses=1))
        forged["uses"] = 1000
        cases.append(("forged", forged))
        unknown = mint_grant(door.key, uses=3, now=int(time.time()))  # ours, never recorded
        cases.append(("unknown", unknown))
        expired = mint_grant(door.key, uses=3, now=int(time.time()) - 100, ttl=50)
        store = door.store()
        store.add_grant(expired, int(time.time()) - 100)
        store.close()
        cases.append(("expired", expired))
        for name, grant in cases:
            before = grant_state(door, grant["id"]) if name not in ("foreign", "unknown") \
                else None
            doc = redeem(door, bob, grant)
            assert code_of(doc) == -32011, (name, doc)
            if before is not None:
                assert grant_state(door, grant["id"]) == before, name
        assert code_of(door.rpc(send_request(bob, door.did))) == -32010
        # the redeemer's own statement: bad signature -32001, stale -32002
        fresh = issue(uses=5)
        params = redeem_params(bob, fresh, now=int(time.time()))
        params["sig"] = redeem_params(alice, fresh, now=int(time.time()))["sig"]
        doc = door.rpc({"jsonrpc": "2.0", "id": 1, "method": "contact/redeem", "params": params})
        assert code_of(doc) == -32001
        assert code_of(redeem(door, bob, fresh, now=int(time.time()) - 1000)) == -32002
        assert grant_state(door, fresh["id"]) == (0, 0)


def test_fifty_concurrent_redemptions_of_five_uses() -> None:
    with live_door("closed") as door:  # fifty requests in flight at once: a real server
        grant = issue(uses=5)
        now = int(time.time())
        bodies = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "contact/redeem",
                              "params": redeem_params(SigningKey.generate(), grant, now=now)})
                  for i in range(50)]

        async def fire() -> list[dict[str, Any]]:
            async with httpx.AsyncClient(timeout=20) as client:
                resps = await asyncio.gather(*(client.post(door.base, content=b)
                                               for b in bodies))
                return [r.json() for r in resps]

        docs = asyncio.run(fire())
        assert sum(1 for d in docs if "result" in d) == 5
        assert sum(1 for d in docs if code_of(d) == -32011) == 45
        assert grant_state(door, grant["id"]) == (5, 5)


def test_quarantine_holds_then_owner_decides() -> None:
    with local_door("quarantine") as door:
        alice = SigningKey.generate()
        first = door.rpc(send_request(alice, door.did, "first contact"))
        assert code_of(first) == -32014
        gate = first["error"]["data"]
        assert gate["ok"] is False and gate["needsHumanConfirmation"] is True
        assert gate["origin"] == door.origin and gate["message"] and gate["agentHint"]
        rid = gate["requestId"]
        later = door.rpc(send_request(alice, door.did, "second"))
        assert code_of(later) == -32014 and later["error"]["data"]["requestId"] == rid
        code, listed = run_json("op", "--as", "door", "requests", "list")
        # the later one is held too (issue 12: not dropped without a word), under the one
        # request of its sender (issue 22 item 4)
        assert code == 0 and len(listed["requests"]) == 1
        assert [m["text"] for m in listed["requests"][0]["messages"]] == ["first contact",
                                                                          "second"]
        assert listed["requests"][0]["id"] == rid
        assert run("op", "--as", "door", "requests", "approve", rid).exit_code == 0
        code, inbox = run_json("op", "--as", "door", "inbox")
        assert [m["text"] for m in inbox["messages"]] == ["first contact", "second"]
        assert run_json("op", "--as", "door", "requests", "list")[1]["requests"] == []
        assert "result" in door.rpc(send_request(alice, door.did, "third"))
        # redeeming is not approval: a new sender with a grant is still held
        bob = SigningKey.generate()
        assert "result" in redeem(door, bob, issue(uses=1))
        held = door.rpc(send_request(bob, door.did, "bob here"))
        assert code_of(held) == -32014
        assert run("op", "--as", "door", "requests", "reject",
                   held["error"]["data"]["requestId"]).exit_code == 0
        assert code_of(door.rpc(send_request(bob, door.did))) == -32010
        # a new grant lifts the rejection; the next message is held again
        assert "result" in redeem(door, bob, issue(uses=1))
        again = door.rpc(send_request(bob, door.did, "may I?"))
        assert code_of(again) == -32014
        assert again["error"]["data"]["requestId"] != held["error"]["data"]["requestId"]
        # reject --block: refused outright, whatever grant it holds
        assert run("op", "--as", "door", "requests", "reject", "--block",
                   again["error"]["data"]["requestId"]).exit_code == 0
        assert code_of(redeem(door, bob, issue(uses=1))) == -32010, "blocked: no redeem either"
        assert code_of(door.rpc(send_request(bob, door.did))) == -32010
        code, senders = run_json("op", "--as", "door", "senders", "list")
        assert {s["did"]: s["status"] for s in senders["senders"]}[bob.did] == "blocked"
        store = door.store()
        actions = [d["action"] for d in store.decisions()]
        store.close()
        assert actions == ["approve", "reject", "reject+block"]


def test_lists_allow_and_block() -> None:
    with local_door("quarantine") as door:
        carol = SigningKey.generate()
        assert run("op", "--as", "door", "senders", "allow", carol.did).exit_code == 0
        assert "result" in door.rpc(send_request(carol, door.did))
        assert run("op", "--as", "door", "senders", "block", carol.did).exit_code == 0
        assert code_of(door.rpc(send_request(carol, door.did))) == -32010
        assert run("op", "--as", "door", "senders", "unblock", carol.did).exit_code == 0
        assert code_of(door.rpc(send_request(carol, door.did))) == -32014
        assert run("op", "--as", "door", "senders", "block", "not-a-did").exit_code == 2
    with local_door("open") as door:
        dave = SigningKey.generate()
        run("op", "--as", "door", "senders", "block", dave.did)
        assert code_of(door.rpc(send_request(dave, door.did))) == -32010


def test_inbox_prints_safely_latest_conversation_last() -> None:
    with local_door("open") as door:
        alice = SigningKey.generate()
        for i in range(22):
            assert "result" in door.rpc(send_request(alice, door.did, f"m{i}"))
        evil = "\x1b[2J\u202eevil\x07"
        assert "result" in door.rpc(send_request(alice, door.did, evil, ctx="c\x1b"))
        out = run("op", "--as", "door", "inbox")
        assert out.exit_code == 0 and "\x1b" not in out.stdout and "\u202e" not in out.stdout
        assert "verified" in out.stdout and "?[2J?evil?" in out.stdout
        _code, doc = run_json("op", "--as", "door", "inbox")
        # the last 20; the conversation with the latest message comes last
        assert len(doc["messages"]) == 20 and doc["messages"][-1]["text"] == evil
        assert doc["messages"][-1]["from"] == alice.did and doc["messages"][-1]["verified"]
        assert [m["text"] for m in doc["messages"][:-1]] == [f"m{i}" for i in range(3, 22)]
        _code, doc = run_json("op", "--as", "door", "inbox", "--all")
        assert len(doc["messages"]) == 23


def test_redeem_refusals_come_from_the_one_redeem_check() -> None:
    """The door judges contact/redeem with the artifact's check (check_redeemer/check_grant):
    each refusal keeps its JSON-RPC code and names the artifact's reason."""



    with local_door("quarantine") as door:
        bob = SigningKey(b"\x41" * 32)
        grant = issue(uses=1)
        now = int(time.time())

        def reason(doc: dict[str, Any]) -> tuple[int | None, str]:
            return code_of(doc), doc["error"]["data"]["reason"]

        assert reason(redeem(door, bob, grant, now=now - 301)) == (-32002, "stale")
        other = mint_grant(SigningKey(b"\x42" * 32), uses=1, now=now)
        assert reason(redeem(door, bob, other)) == (-32011, "grant-for-other-did")
        forged = redeem_params(bob, grant, now=now)
        forged["sig"] = bob.sign(b"something else")
        body = {"jsonrpc": "2.0", "id": 9, "method": "contact/redeem", "params": forged}
        assert reason(door.rpc(body)) == (-32001, "bad-signature")
        shapeless = {**forged, "grant": "not a grant"}
        assert reason(door.rpc({**body, "params": shapeless})) == (-32602, "malformed-grant")
        assert "result" in redeem(door, bob, grant)
