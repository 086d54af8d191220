"""``muretai demo``'s agent part: two agents, each an MCP client session (the SDK's own stdio
client) with ``muretai mcp``, and the person who decides between them.

A new visitor's agent (dave) asks ``whoami``, writes to the shop with ``contact_and_dm``
(held: dave is a stranger to the quarantined door); the shop's agent is asked to approve and
may not (the gate, naming the command); the shop's owner runs it while the shop's agent
waits on the gate's ``requestId``; the owner answers through dave's relay, and dave's
agent's ``wait_for_message`` returns the answer, then ``read_inbox`` after its cursor.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol

from muretai_cli.cli._json import emit_json_line
from muretai_cli.transport.children import muretai_argv

if TYPE_CHECKING:
    from muretai_cli.mcp import ToolSession


class Demo(Protocol):
    """What this part needs of ``cli._demo.Demo`` (named here: ``_demo`` imports this
    module, so this module does not import it)."""

    relay: str | None
    steps: int
    failures: list[str]
    json_out: bool

    @property
    def env(self) -> dict[str, str]: ...

    def show(self, text: str) -> None: ...

    def run(self, title: str, *args: str, expect: int = 0, stdin: str | None = None,
            show: bool = True) -> subprocess.CompletedProcess[str]: ...

WAIT = 30  # seconds a wait may wait (the most a wait_for_message takes)


def _shown(doc: dict[str, Any], keys: tuple[str, ...]) -> str:
    return json.dumps({k: doc.get(k) for k in ("ok", *keys) if k in doc}, ensure_ascii=True)


def tool_step(demo: Demo, title: str, result: dict[str, Any] | Exception, shown: str,
              expect: Callable[[dict[str, Any]], bool], keys: tuple[str, ...]) -> None:
    """Narrate one tool call as a step of the demo and record whether it did as expected."""
    demo.steps += 1
    demo.show(f"\n[{demo.steps}] {title}")
    demo.show(f"    mcp> {shown}")
    try:
        good = isinstance(result, dict) and expect(result)
    except (KeyError, TypeError, AttributeError):  # an unexpected shape is a failed step
        good = False
    if isinstance(result, dict):
        demo.show(f"    {_shown(result, keys)[:300]}")
    else:
        demo.show(f"    {type(result).__name__}: {result}"[:300])
    demo.show(f"    -> {'ok' if good else 'UNEXPECTED'}")
    if demo.json_out:
        emit_json_line({"ok": good, "event": "step", "step": demo.steps, "title": title,
                        "tool": shown.split(" ", 1)[0]})
    if not good:
        detail = _shown(result, ("code", "message")) if isinstance(result, dict) else result
        demo.failures.append(f"step {demo.steps} ({title}): {detail}")


def _call(session: ToolSession, tool: str, **args: Any) -> dict[str, Any] | Exception:
    try:
        return session.call(tool, **args)
    except Exception as exc:  # a failed step is recorded, never the demo's end
        return exc


def _result(waiting: Future[dict[str, Any]]) -> dict[str, Any] | Exception:
    try:
        return waiting.result(timeout=WAIT + 30)
    except Exception as exc:  # a failed step is recorded
        return exc


def _args(tool: str, **args: Any) -> str:
    short = {k: (v[:24] + "…" if isinstance(v, str) and len(v) > 28 else v)
             for k, v in args.items()}
    return f"{tool} {json.dumps(short, ensure_ascii=True)}"


def agent_part(demo: Demo, url: str, shop: str) -> None:
    """Run the agents' sessions against the running door at ``url`` (the shop, ``shop``)."""
    from muretai_cli.mcp import tool_session

    relay = demo.relay
    if not relay:
        return
    made = demo.run("dave, whose agent will write to the shop, gets an identity on the relay",
                    "id", "new", "dave", "--relay", relay)
    dave = made.stdout.strip()  # `id new` prints the new DID
    demo.run("dave publishes his card (where answers reach him)", "card", "publish", "--as",
             "dave", show=False)
    demo.show("\n[*] two agents connect: muretai mcp --as dave, muretai mcp --as shop "
              f"--url {url} (MCP over stdio, the SDK's client)")
    with contextlib.ExitStack() as stack:
        agent = stack.enter_context(tool_session(muretai_argv("mcp", "--as", "dave"),
                                                 demo.env))
        desk = stack.enter_context(tool_session(muretai_argv("mcp", "--as", "shop", "--url",
                                                             url), demo.env))
        me = _call(agent, "whoami")
        tool_step(demo, "dave's agent: who am I (its card published at the relay)", me,
                  "whoami {}", lambda d: d["ok"] is True and d["did"] == dave
                  and d["cardPublished"] is True, ("did", "cardPublished", "latest"))
        cursor = me.get("latest", 0) if isinstance(me, dict) else 0
        text = "Hello, do you have the blue coat in size M?"
        sent = _call(agent, "contact_and_dm", to=shop, message=text, connect=url)
        tool_step(demo, "dave's agent writes to the shop in one step (card fetched and "
                        "verified, one signed DM): held, dave is a stranger there", sent,
                  _args("contact_and_dm", to=shop, message=text, connect=url),
                  lambda d: d["ok"] is True and d.get("state") == "held",
                  ("state", "requestId", "messageId"))
        if not isinstance(sent, dict) or not isinstance(sent.get("requestId"), str):
            return
        rid, mid = sent["requestId"], str(sent.get("messageId"))
        gated = _call(desk, "requests_respond", id=rid, decision="approve")
        tool_step(demo, "the shop's agent is asked to approve: it may not decide alone (the "
                        "gate names the owner's command)", gated,
                  _args("requests_respond", id=rid, decision="approve"),
                  lambda d: d.get("needsHumanConfirmation") is True
                  and d.get("requestId") == rid, ("needsHumanConfirmation", "requestId",
                                                  "command"))
        waiting = desk.call_soon("wait_for_message", request_id=rid, timeout=WAIT)
        demo.run("the shop's owner approves at a shell, as the gate said", "op", "--as",
                 "shop", "requests", "approve", rid)
        tool_step(demo, "the shop agent's wait on the gate's requestId returns: approved",
                  _result(waiting), _args("wait_for_message", request_id=rid, timeout=WAIT),
                  lambda d: d["ok"] is True and d.get("status") == "approved",
                  ("status", "timedOut"))
        answer = agent.call_soon("wait_for_message", after=cursor, peer=shop, timeout=WAIT)
        demo.run("the owner answers dave, through his relay (sealed)", "op", "--as", "shop",
                 "dm", dave, "Yes, one left in M. Shall I keep it for you?", "--reply-to", mid)
        demo.run("dave's node drains his relay (the answer stored, verified)", "op", "--as",
                 "dave", "turn-check", show=False)

        def answered(d: dict[str, Any]) -> bool:
            entries = d.get("entries") or []
            return d["ok"] is True and any(e.get("from") == shop for e in entries)

        tool_step(demo, "dave's agent's wait_for_message returns the owner's answer",
                  _result(answer), _args("wait_for_message", after=cursor, peer=shop,
                                         timeout=WAIT), answered, ("latest", "timedOut"))
        page = _call(agent, "read_inbox", after=cursor)
        tool_step(demo, "dave's agent reads its inbox after its cursor (moving no one's "
                        "position): the answer, as data", page,
                  _args("read_inbox", after=cursor), answered, ("after", "latest", "entries"))
