"""Tool results as the WebMCP Conventions shape them: ``ok`` first; a refusal
``{ok: false, code, message, agentHint}``; a gate ``{ok: false, needsHumanConfirmation: true,
origin, requestId, message, agentHint}``. Every string a result carries is stripped of
control characters (a peer's words stay data, in their own field)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import MuretaiError

if TYPE_CHECKING:
    from muretai_cli.visit.send import SendReport

# A local server has no page: its gates name this origin (the Conventions want an https one).
LOCAL_ORIGIN = "https://localhost"
# (and the bidi marks and zero-width characters that hide or reorder text: U+061C, U+200B,
# U+200E/F, U+2060-2064, U+FEFF)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028\u2029"
                      r"\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def clean(value: Any) -> Any:
    """``value`` with every string (keys too) stripped of control characters; newlines and
    tabs stay (a message may have lines)."""
    if isinstance(value, str):
        return _CONTROL.sub("", value)
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def ok(**fields: Any) -> dict[str, Any]:
    """A success: ``ok: true`` first, then ``fields`` (cleaned)."""
    out: dict[str, Any] = {"ok": True}
    out.update(clean(fields))
    return out


def with_ok(doc: dict[str, Any]) -> dict[str, Any]:
    """A library document (its own ``ok``) with ``ok`` moved to the front, cleaned."""
    body = clean(doc)
    return {"ok": bool(body.pop("ok", True)), **body}


def refusal(code: str, message: str, agent_hint: str, **data: Any) -> dict[str, Any]:
    """A refusal: what broke (``message``, for the person) and what to do (``agentHint``)."""
    return {"ok": False, "code": code, "message": clean(message),
            "agentHint": clean(agent_hint), **clean(data)}


def refusal_of(exc: MuretaiError) -> dict[str, Any]:
    """The library's error as a refusal; its data (a door's refusal fields) as data."""
    hint = exc.hint or "do not retry the same call unchanged; tell the person what failed"
    data = {k: v for k, v in exc.data.items()
            if k not in ("ok", "code", "message", "agentHint", "needsHumanConfirmation")}
    return refusal(exc.code, exc.detail, hint, **({"details": data} if data else {}))


def gate(request_id: str, message: str, agent_hint: str, **data: Any) -> dict[str, Any]:
    """The owner must decide: ``message`` names the shell command the person runs."""
    return {"ok": False, "needsHumanConfirmation": True, "origin": LOCAL_ORIGIN,
            "requestId": clean(request_id), "message": clean(message),
            "agentHint": clean(agent_hint), **clean(data)}


def as_result(doc: dict[str, Any], tool: str) -> dict[str, Any]:
    """A library report (``ok``, ``error``/``state``, ``message``, ``hint``) as a tool result:
    a success as it is, a failure as a refusal naming its code."""
    body = with_ok(doc)
    if body["ok"]:
        return body
    code = str(body.pop("error", None) or body.get("state") or f"{tool}-failed")
    message = str(body.pop("message", None) or f"{tool} did not succeed ({code})")
    hint = str(body.pop("hint", None) or "tell the person what failed; do not resend unchanged")
    body.pop("detail", None)
    return {"ok": False, "code": code, "message": message, "agentHint": hint, **body}


def sent_result(report: SendReport, tool: str) -> dict[str, Any]:
    """A send's report (``visit.send``'s) as a tool result: a message held for the peer's
    owner is the owner deciding, not a failure of the send."""
    doc = report.to_json()
    if report.state == "held":
        doc["ok"] = True
    return as_result(doc, tool)


def guarded(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one tool: the library's errors become refusals; nothing ends the server."""
    try:
        return call()
    except MuretaiError as exc:
        return refusal_of(exc)
    except Exception as exc:  # a tool never ends the server, and never shows a traceback
        return refusal("internal-error", f"the tool failed: {type(exc).__name__}",
                       "report this to the person; the server still answers")
