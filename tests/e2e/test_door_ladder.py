"""The ladder, rung by rung, against a running door. Each request breaks one rung and
(where it can) every later one too, so the test fails if its rung is removed or moved later."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from muretai_cli.artifacts.message import envelope_of
from muretai_cli.seam import (
    SMALL_ORDER_ENCODINGS,
    SigningKey,
    did_from_public,
    verify_card_envelope,
    verify_envelope,
)
from tests.door_helpers import (
    Live,
    code_of,
    live_door,
    local_door,
    raw_exchange,
    send_request,
    status_of,
)

SMALL_ORDER_DID = did_from_public(sorted(SMALL_ORDER_ENCODINGS)[0])


@pytest.fixture()
def door() -> Iterator[Live]:
    with local_door("open") as live:  # in-process: the ladder needs no socket
        yield live


@pytest.fixture()
def alice() -> SigningKey:
    return SigningKey.generate()


def bad_sig(req: dict[str, Any]) -> dict[str, Any]:
    meta = req["params"]["message"]["metadata"]
    sig = meta["sig"]
    meta["sig"] = sig[:10] + ("A" if sig[10] != "A" else "B") + sig[11:]
    return req


def inbox_count(door: Live) -> int:
    store = door.store()
    try:
        return len(store.inbox(None))
    finally:
        store.close()


def test_accepted_reply_is_signed_and_echoes(door: Live, alice: SigningKey) -> None:
    req = send_request(alice, door.did, "hi there", ctx="conv-7", rid="abc")
    doc = door.rpc(req)
    assert doc["_status"] == 200 and doc["id"] == "abc", doc
    reply = doc["result"]
    env = envelope_of(reply)
    fields = verify_envelope(env, to_did=alice.did)
    assert fields["from"] == door.did and fields["contextId"] == "conv-7"
    assert reply["metadata"]["replyTo"] == req["params"]["message"]["messageId"]
    assert reply["role"] == "agent" and abs(fields["timestamp"] - time.time()) < 5
    # a null contextId stays null
    doc = door.rpc(send_request(alice, door.did, "again"))
    assert "contextId" in doc["result"] and doc["result"]["contextId"] is None
    verify_envelope(envelope_of(doc["result"]), to_did=alice.did)
    assert inbox_count(door) == 2


def test_body_cap_413_before_parsing() -> None:
    with live_door("open") as door:  # raw bytes on a real socket: the framing matters here
        head = (f"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {1024 * 1024 + 1}\r\n\r\n").encode()
        assert status_of(raw_exchange(door.origin, head)) == 413
        # streamed (chunked, no length): refused once past the cap
        chunk = b"x" * 65536
        body = b"".join(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(17)) + \
            b"0\r\n\r\n"
        head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        assert status_of(raw_exchange(door.origin, head + body)) == 413


@pytest.mark.parametrize("raw", [b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":\xff}',
                                 b"\xef\xbb\xbf{}", b"{", b"", b'{"a":NaN}',
                                 b'{"a":"\\ud800"}'])
def test_parse_boundary_400(door: Live, raw: bytes) -> None:
    resp = door.post(raw)
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == -32700 and resp.json()["id"] is None


def test_non_object_is_400_invalid_request(door: Live) -> None:
    resp = door.post(b"[1,2]")
    assert resp.status_code == 400 and resp.json()["error"]["code"] == -32600


def test_jsonrpc_shape_and_method(door: Live, alice: SigningKey) -> None:
    req = send_request(alice, door.did)
    del req["jsonrpc"]
    assert code_of(door.rpc(req)) == -32600
    for method in ("tasks/get", None, 1, {"x": 1}):
        req = bad_sig(send_request(alice, door.did))
        req["method"] = method
        doc = door.rpc(req)
        assert doc["_status"] == 200 and code_of(doc) == -32601
    req = send_request(alice, door.did)
    req["params"] = [req["params"]]
    assert code_of(door.rpc(req)) == -32602
    req = send_request(alice, door.did)
    req["params"] = {"message": "text"}
    assert code_of(door.rpc(req)) == -32602


@pytest.mark.parametrize("breaks", ["kind", "role", "messageId", "part", "metadata", "from",
                                    "contextId", "parts"])
def test_a2a_shape_before_size(door: Live, alice: SigningKey, breaks: str) -> None:
    req = send_request(alice, door.did, "x" * 70000)  # also oversized: shape comes first
    msg = req["params"]["message"]
    if breaks == "kind":
        del msg["kind"]
    elif breaks == "role":
        msg["role"] = "agent"
    elif breaks == "messageId":
        msg["messageId"] = ""
    elif breaks == "part":
        msg["parts"].append({"kind": "file", "file": {"uri": "https://x"}})
    elif breaks == "metadata":
        msg["metadata"] = "from me"
    elif breaks == "from":
        msg["metadata"]["from"] = 7
    elif breaks == "contextId":
        msg["contextId"] = 1.0
    elif breaks == "parts":
        msg["parts"] = {"kind": "text"}
    doc = door.rpc(req)
    assert doc["_status"] == 200 and code_of(doc) == -32600, doc


def test_text_size_before_any_crypto(door: Live, alice: SigningKey) -> None:
    # oversized, bad signature, stale, another recipient, no timestamp type: still -32005
    req = bad_sig(send_request(alice, "did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH",
                               "é" * 32769, now=int(time.time()) - 5000))
    req["params"]["message"]["metadata"]["timestamp"] = 1.5
    assert code_of(door.rpc(req)) == -32005
    ok = send_request(alice, door.did, "é" * 32768)  # exactly 64 KiB is fine
    assert "result" in door.rpc(ok)


def test_six_fields_before_recipient(door: Live, alice: SigningKey) -> None:
    for mutate in ("bool", "list", "nosig"):  # a float or string is verified as received
        req = send_request(alice, "did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH")
        meta = req["params"]["message"]["metadata"]
        if mutate == "bool":
            meta["timestamp"] = True
        elif mutate == "list":
            meta["timestamp"] = [meta["timestamp"]]
        else:
            del meta["sig"]
        doc = door.rpc(req)
        assert code_of(doc) == -32001, (mutate, doc)


def test_recipient_before_freshness_and_signature(door: Live, alice: SigningKey) -> None:
    other = SigningKey.generate().did
    req = bad_sig(send_request(alice, other, now=int(time.time()) - 5000))
    assert code_of(door.rpc(req)) == -32003


def test_freshness_before_signature(door: Live, alice: SigningKey) -> None:
    for skew in (-320, 320):
        req = bad_sig(send_request(alice, door.did, now=int(time.time()) + skew))
        assert code_of(door.rpc(req)) == -32002
    assert "result" in door.rpc(send_request(alice, door.did, now=int(time.time()) - 250))


def test_replay_before_signature_and_no_duplicate_row(door: Live, alice: SigningKey) -> None:
    req = send_request(alice, door.did, "once")
    first = door.rpc(req)
    assert "result" in first
    # an exact repeat (a visitor whose answer was lost) gets the same signed reply, recovered
    again = door.rpc(req)
    assert again["_status"] == 200 and "result" in again
    assert again["result"]["metadata"].pop("recovered") is True
    assert again["result"] == first["result"]
    # any difference stays a replay: another JSON-RPC id is fine, another field is not
    retried = json.loads(json.dumps(req))
    retried["params"]["message"]["contextId"] = "c-other"
    assert code_of(door.rpc(retried)) == -32002
    forged = bad_sig(send_request(alice, door.did, "other", mid=req["params"]["message"]
                                  ["messageId"]))
    assert code_of(door.rpc(forged)) == -32002
    assert inbox_count(door) == 1


def test_signature_refusals_store_nothing(door: Live, alice: SigningKey) -> None:
    req = send_request(alice, door.did, "genuine")
    req["params"]["message"]["parts"][0]["text"] = "edited"
    assert code_of(door.rpc(req)) == -32001
    req = send_request(alice, door.did)
    req["params"]["message"]["metadata"]["from"] = SMALL_ORDER_DID
    doc = door.rpc(req)
    assert code_of(doc) == -32001 and doc["error"]["data"]["reason"] == "small-order-key"
    req = send_request(alice, door.did)
    sig = req["params"]["message"]["metadata"]["sig"]
    req["params"]["message"]["metadata"]["sig"] = sig.rstrip("=")  # non-canonical base64
    assert code_of(door.rpc(req)) == -32001
    assert inbox_count(door) == 0
    # a refused (unsigned-for-real) message does not burn its id
    assert "result" in door.rpc(send_request(alice, door.did, "genuine",
                                             mid=req["params"]["message"]["messageId"]))


def test_rate_limits_after_signature() -> None:
    with local_door("open", rate_per_sender=2, rate_total=0) as door:
        alice = SigningKey.generate()
        for _ in range(2):
            assert "result" in door.rpc(send_request(alice, door.did))
        assert code_of(door.rpc(bad_sig(send_request(alice, door.did)))) == -32001
        resp = door.post(send_request(alice, door.did))
        assert resp.status_code == 429 and resp.json()["error"]["code"] == -32004
        assert int(resp.headers["retry-after"]) >= 1
        assert "result" in door.rpc(send_request(SigningKey.generate(), door.did))
    with local_door("closed", rate_per_sender=0, rate_total=3) as door:
        codes = [code_of(door.rpc(send_request(SigningKey.generate(), door.did)))
                 for _ in range(4)]
        assert codes == [-32010, -32010, -32010, -32004]  # rate precedes policy


def test_id_echo_rules(door: Live, alice: SigningKey) -> None:
    for rid, echoed in (("s-1", "s-1"), (7, 7), (None, None), ({"a": 1}, None), ([1], None),
                        (2**60, None), (True, None)):
        req = send_request(alice, door.did)
        req["id"] = rid
        assert door.rpc(req)["id"] == echoed, rid
        req = bad_sig(send_request(alice, door.did))
        req["id"] = rid
        assert door.rpc(req)["id"] == echoed, rid


def test_errors_never_echo_caller_text(door: Live, alice: SigningKey) -> None:
    marker = "ZZ-MARKER-4242"
    reqs = [bad_sig(send_request(alice, door.did, marker, mid=marker, ctx=marker)),
            send_request(alice, marker, marker),
            {"jsonrpc": "2.0", "id": 1, "method": marker, "params": {}},
            {"jsonrpc": "2.0", "id": 1, "method": "message/send",
             "params": {"message": {"kind": marker}}}]
    for req in reqs:
        resp = door.post(req)
        assert marker not in resp.text and "Traceback" not in resp.text
    resp = door.post(b'{"jsonrpc":"2.0","id":1,"method":"ZZ-MARKER-4242",}')
    assert resp.status_code == 400 and marker not in resp.text


def test_card_routes_and_envelope() -> None:
    with local_door("open", path="/support") as door:
        card = door.get(door.base + "/.well-known/agent-card.json")
        legacy = door.get(door.base + "/.well-known/agent.json")
        assert card.status_code == 200 and card.content == legacy.content
        doc = card.json()
        for field in ("name", "description", "url", "did", "version", "protocolVersion",
                      "capabilities", "defaultInputModes", "defaultOutputModes", "skills"):
            assert field in doc
        assert doc["url"] == door.base and doc["did"] == door.did
        assert doc["protocolVersion"] == "0.2" and "contact" not in doc
        env1 = door.get(door.base + "/.well-known/agent-card.sig.json").json()
        env2 = door.get(door.base + "/.well-known/agent-card.sig.json").json()
        assert env1 == env2  # cached: no signature per request
        assert verify_card_envelope(env1, expected_did=door.did) == doc
        # routes hang off the path; everything else is 404
        assert door.get(door.origin + "/.well-known/agent-card.json").status_code == 404
        assert door.request("POST", door.origin + "/", content=b"{}").status_code == 404
        assert door.request("POST", door.base + "/", content=b"{}").status_code == 404
        assert door.request("POST", door.base + "?x=1", content=b"{}").status_code == 404
        assert door.request("OPTIONS", door.origin + "/nowhere").status_code == 404
        got = door.request("DELETE", door.base)
        assert got.status_code == 405 and "POST" in got.headers["allow"]
        opt = door.request("OPTIONS", door.base)
        assert opt.status_code == 204 and "POST" in opt.headers["allow"]
        # a grant issued changes the card and re-signs the envelope
        from tests.cli_helpers import run

        result = run("contact", "issue", "--as", "door", "--uses", "3", "--expires", "2d")
        assert result.exit_code == 0, result.stderr
        grant = json.loads(result.stdout)
        doc2 = door.get(door.base + "/.well-known/agent-card.json").json()
        assert doc2["contact"] == grant
        env3 = door.get(door.base + "/.well-known/agent-card.sig.json").json()
        assert env3["sig"] != env1["sig"]
        assert verify_card_envelope(env3, expected_did=door.did)["contact"] == grant
        assert run("contact", "revoke", "--as", "door", grant["id"]).exit_code == 0
        assert "contact" not in door.get(door.base + "/.well-known/agent.json").json()


def test_keyless_walk_in_is_told_the_terms_partial_envelope_is_not(door: Live,
                                                                    alice: SigningKey) -> None:
    card = door.get(door.origin + "/.well-known/agent-card.json").json()
    scheme = card["securitySchemes"]["did-key-ed25519"]["agentEntry"]
    assert card["security"] == [{"did-key-ed25519": []}]
    assert scheme["recipient"] == door.did and scheme["endpoint"] == door.origin + "/"
    assert scheme["signedFields"] == ["contextId", "from", "messageId", "text", "timestamp",
                                      "to"]
    assert isinstance(scheme["exampleRequest"], dict)
    req = send_request(alice, door.did)
    del req["params"]["message"]["metadata"]
    doc = door.rpc(req)
    assert code_of(doc) == -32001 and doc["error"]["data"]["accepts"] == [scheme]
    req = send_request(alice, door.did)
    del req["params"]["message"]["metadata"]["sig"]
    doc = door.rpc(req)
    assert code_of(doc) == -32001 and "accepts" not in doc["error"]["data"]


def test_internal_fault_is_32603_without_internals(door: Live, alice: SigningKey) -> None:
    def boom(*_: object) -> None:
        raise RuntimeError("secret internal state /etc/passwd")

    door.door.store.lookup = boom  # type: ignore[method-assign,assignment]
    resp = door.post(send_request(alice, door.did, rid="x-1"))
    assert resp.status_code == 200
    assert resp.json() == {"jsonrpc": "2.0", "id": "x-1",
                           "error": {"code": -32603, "message": "Internal error"}}
    assert "secret" not in resp.text and "Traceback" not in resp.text


def test_a_nul_character_anywhere_is_refused_before_the_store(door: Live,
                                                             alice: SigningKey) -> None:
    # the same verdict on every backend (PostgreSQL cannot store one), with nothing stored
    doc = door.rpc(send_request(alice, door.did, "a \u0000 inside"))
    assert code_of(doc) == -32600 and doc["error"]["data"]["reason"] == "nul-character", doc
    # an escaped backslash before "u0000" is text, not a NUL
    doc = door.rpc(send_request(alice, door.did, "a \\u0000 is six characters"))
    assert doc["_status"] == 200 and "result" in doc, doc
    assert inbox_count(door) == 1
