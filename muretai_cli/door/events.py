"""What the door tells its ``on_event`` hook of each arrival (``serve`` logs it): what came
(method, claimed sender, messageId) and what became of it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from muretai_cli.inbox.consent import HELD_CODE
from muretai_cli.inbox.ladder import RpcError

__all__ = ["OnEvent", "tell", "tell_refusal"]

OnEvent = Callable[[dict[str, Any]], None]
log = logging.getLogger("uvicorn.error")


def tell(on_event: OnEvent | None, now: int, event: str, method: str | None, params: object,
         **facts: Any) -> None:
    """Tell ``on_event`` of an arrival. Sender and messageId are as claimed: verified only
    if accepted. Never raises: a logging hook must never change the answer."""
    if on_event is None:
        return
    meta: Any = {}
    message: Any = params.get("message") if isinstance(params, dict) else None
    if isinstance(message, dict):
        meta = message.get("metadata") or {}
    sender = (meta.get("from") if isinstance(meta, dict) else None) or (
        params.get("from") if isinstance(params, dict) else None) or (
        message.get("from") if isinstance(message, dict) else None)  # an onboard/claim
    message_id = message.get("messageId") if isinstance(message, dict) else None
    try:
        on_event({"event": event, "time": now, "method": method,
                  "from": sender if isinstance(sender, str) else None,
                  "messageId": message_id if isinstance(message_id, str) else None,
                  **facts})
    except Exception:  # a logging hook must never change the answer
        log.exception("door: the event hook failed")


def tell_refusal(on_event: OnEvent | None, now: int, err: RpcError,
                 doc: dict[str, Any] | None, found: dict[str, Any]) -> None:
    """A refusal (or a hold) told as ``held`` with its requestId or ``refused`` with its code."""
    method = doc.get("method") if doc is not None else None
    params = doc.get("params") if doc is not None else None
    data = err.data or {}
    named = method if isinstance(method, str) else None
    if err.code == HELD_CODE:
        tell(on_event, now, "held", named, params, requestId=data.get("requestId"), **found)
    else:
        tell(on_event, now, "refused", named, params, code=err.code,
             reason=data.get("reason", err.reason), **found)
