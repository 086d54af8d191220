"""Issue 13 §1: a reply is bound to the message it answers in signed bytes.

A man in the middle that holds no key (a TLS terminator, a proxy) keeps the door's first
signed reply, drops the next DMs and answers each with that old reply and a rewritten
``replyTo``. The visitor must refuse it: the reply's signed contextId (a fresh one per new
conversation) and, when the door's card promises it, its signed messageId prove which
message it answers; ``replyTo`` proves nothing.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from muretai_cli.artifacts.message import REPLY_BINDING, receipt_message_id, reply_message_id
from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door
from tests.servers import run_uvicorn


@dataclass
class Mitm:
    """Forwards to the door until it holds a signed reply, then replays it forever."""

    upstream: str = ""
    kept: dict[str, Any] | None = None
    forwarded: int = 0
    replayed: int = 0
    seen: list[dict[str, Any]] = field(default_factory=list)

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        target = self.upstream + request.url.path
        if request.method == "POST":
            doc = json.loads(body)
            self.seen.append(doc)
            if self.kept is not None:
                self.replayed += 1
                forged = json.loads(json.dumps(self.kept))
                forged["id"] = doc["id"]
                forged["result"]["metadata"]["replyTo"] = doc["params"]["message"]["messageId"]
                return Response(json.dumps(forged), media_type="application/json")
        async with httpx.AsyncClient() as client:
            answer = await client.request(request.method, target, content=body,
                                          headers={"content-type": "application/json"})
        if request.method == "POST":
            self.forwarded += 1
            self.kept = answer.json()
        return Response(answer.content, status_code=answer.status_code,
                        media_type=answer.headers.get("content-type"))


@contextmanager
def mitm_in_front() -> Iterator[tuple[Any, Mitm, str]]:
    """A door whose published URL is a proxy on loopback; yields (door, proxy, proxy URL)."""
    mitm = Mitm()
    app = Starlette(routes=[Route("/{path:path}", mitm.handle, methods=["GET", "POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    front = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    with live_door("open", url=front) as door, run_uvicorn(config, sock):
        mitm.upstream = door.address
        yield door, mitm, front


def _dm(door_did: str, text: str, *extra: str) -> tuple[int, dict[str, Any]]:
    out = run("op", "--as", "vis", "contact", "dm", door_did, text, *extra, "--json")
    return out.exit_code, json.loads(out.stdout)


def test_replayed_reply_with_rewritten_reply_to_is_refused() -> None:
    new_identity("vis")
    with mitm_in_front() as (door, mitm, front):
        code, first = _dm(door.did, "one", "--connect", front)
        assert code == 0, first
        assert first["receipt"]["boundTo"] == "message"
        # a new conversation each time: the old reply's signed contextId is not this one's
        code, second = _dm(door.did, "two")
        assert code == 1, second
        assert "reply-not-bound" in [r["code"] for r in second["reply"]["reasons"]]
        # the same conversation: only the promised messageId can tell the replies apart
        ctx = mitm.seen[0]["params"]["message"]["contextId"]
        code, third = _dm(door.did, "three", "--context", ctx)
        assert code == 1, third
        assert "reply-not-bound" in [r["code"] for r in third["reply"]["reasons"]]
        assert mitm.forwarded == 1 and mitm.replayed == 2
        store = door.store()
        try:
            assert [m["text"] for m in store.inbox(None)] == ["one"]
        finally:
            store.close()


def test_door_signs_a_reply_bound_to_the_request_and_says_so() -> None:
    new_identity("vis")
    with live_door("open") as door:
        card = httpx.get(door.base + "/.well-known/agent-card.json").json()
        assert card["muretai"]["replyBinding"] == REPLY_BINDING
        code, doc = _dm(door.did, "hello", "--connect", door.base)
        assert code == 0, doc
        sent = doc["sent"]
        vis = json.loads(run("id", "show", "vis", "--json").stdout)["did"]
        assert doc["receipt"]["messageId"] == receipt_message_id(vis, sent)
        assert doc["receipt"]["boundTo"] == "message" and doc["reply"] is None
        human = run("op", "--as", "vis", "contact", "dm", door.did, "again")
        assert "(verified, bound to this message)" in human.stdout


def test_new_conversation_gets_a_fresh_context_id() -> None:
    new_identity("vis")
    with mitm_in_front() as (door, mitm, front):
        mitm.kept = None
        assert _dm(door.did, "a", "--connect", front)[0] == 0
        mitm.kept = None  # forward the next one too
        assert _dm(door.did, "b")[0] == 0
        contexts = [d["params"]["message"]["contextId"] for d in mitm.seen]
        assert all(isinstance(c, str) and len(c) >= 32 for c in contexts)
        assert contexts[0] != contexts[1]


def _reply(door: Any, me: str, *, ctx: str | None, mid: str | None = None,
           reply_to: str | None = "m-1") -> dict[str, Any]:
    import time

    from muretai_cli.artifacts.message import signed_message

    return signed_message(door, to=me, text="ok", now=int(time.time()), context_id=ctx,
                          role="agent", reply_to=reply_to, message_id=mid)


def test_binding_rules_one_by_one() -> None:
    import time

    from muretai_cli.seam import SigningKey
    from muretai_cli.visit.dm import Sent, check_signed_reply

    door, me = SigningKey.generate(), SigningKey.generate().did
    now = int(time.time())

    def judge(reply: dict[str, Any], sent: Sent) -> tuple[list[str], str | None]:
        reasons, _, binding = check_signed_reply(reply, door_did=door.did, me=me, sent=sent,
                                                 now=now)
        return [r.code for r in reasons if r.severity == "error"], binding

    promised = reply_message_id(me, "m-1")
    # no promise: the conversation is all the signature proves, and that is what is said
    assert judge(_reply(door, me, ctx="c-1"), Sent("m-1", "c-1")) == ([], "conversation")
    assert judge(_reply(door, me, ctx="c-2"), Sent("m-1", "c-1")) == (["reply-not-bound"], None)
    assert judge(_reply(door, me, ctx=None), Sent("m-1", "c-1")) == (["reply-not-bound"], None)
    # a promise: the signed messageId must be the derived one, whatever replyTo says
    assert judge(_reply(door, me, ctx="c-1", mid=promised),
                 Sent("m-1", "c-1", promised)) == ([], "message")
    assert judge(_reply(door, me, ctx="c-1", mid="r-other"),
                 Sent("m-1", "c-1", promised)) == (["reply-not-bound"], None)
    # replyTo is a hint: a wrong one is still refused, a right one proves nothing alone
    assert "reply-to-other-message" in judge(_reply(door, me, ctx="c-1", reply_to="m-9"),
                                             Sent("m-1", "c-1"))[0]


def test_reply_message_id_is_a_fixed_function() -> None:
    a = reply_message_id("did:key:z6MkA", "m-1")
    assert a == reply_message_id("did:key:z6MkA", "m-1")
    assert a.startswith("r-") and len(a) == 34
    assert a != reply_message_id("did:key:z6MkB", "m-1")
    assert a != reply_message_id("did:key:z6MkA", "m-2")


def test_reply_message_id_is_the_documented_digest() -> None:
    import hashlib

    digest = hashlib.sha256(b"muretai-reply-v1\x00did:key:z6MkA\x00m-1").hexdigest()
    assert reply_message_id("did:key:z6MkA", "m-1") == "r-" + digest[:32]


def test_an_unsigned_reply_to_is_kept_only_when_the_signed_fields_prove_it() -> None:
    # The same rule for a door and a relay drain (one function): metadata.replyTo names one of
    # my messages, but only the reply's signed contextId (that message's) or its signed
    # messageId (our door's derived one) proves it answers that message.
    import time

    from muretai_cli.artifacts.message import build_message, build_message_send
    from muretai_cli.door.core import Door, DoorConfig
    from muretai_cli.inbox.store import IdentityStore, db_path
    from muretai_cli.seam import SigningKey, sign_envelope
    from muretai_cli.urls import parse_base_url

    me, bob, carol = SigningKey(b"\x0c" * 32), SigningKey.generate(), SigningKey.generate()
    store = IdentityStore(db_path(me.did))
    door = Door(me, DoorConfig(name="me", url=parse_base_url("http://127.0.0.1:9"),
                               policy="open", rate_per_sender=0, rate_total=0), store)
    now = int(time.time())
    store.record_sent(peer=bob.did, channel="door", state="delivered", now=now, message={
        "messageId": "m-mine", "contextId": "c-mine", "text": "hi bob", "timestamp": now})

    def arrives(sender: SigningKey, mid: str, ctx: str | None) -> str | None:
        env = sign_envelope(sender, to=me.did, text=f"{mid} text", timestamp=now,
                            message_id=mid, context_id=ctx)
        request = build_message_send(build_message(env, reply_to="m-mine"), 1)
        status, body, _ = door.handle_post(json.dumps(request).encode())
        assert status == 200 and "result" in json.loads(body), body
        got = store.received(sender.did, mid)
        assert got is not None
        return got["replyTo"]  # type: ignore[no-any-return]

    assert arrives(bob, "b-1", "c-mine") == "m-mine"  # its signed contextId is my message's
    assert arrives(bob, "b-2", "c-other") is None  # the hint alone proves nothing
    assert arrives(bob, "b-3", None) is None
    assert arrives(carol, "c-1", "c-mine") is None  # not the peer my message went to
    assert arrives(bob, reply_message_id(me.did, "m-mine"), "c-x") == "m-mine"  # derived id
