"""The door's shape rung (rung 4): contextId and messageId are capped and a message that says
nothing is refused, before the size rung."""

from __future__ import annotations

import json
from typing import Any

import pytest

from muretai_cli.seam import SigningKey


def _door() -> Any:
    from muretai_cli.door.core import Door, DoorConfig
    from muretai_cli.inbox.store import IdentityStore, db_path
    from muretai_cli.urls import parse_base_url

    key = SigningKey(b"\x0a" * 32)
    config = DoorConfig(name="door", url=parse_base_url("http://127.0.0.1:9"), policy="open",
                        rate_per_sender=0, rate_total=0)
    return Door(key, config, IdentityStore(db_path(key.did)))


def _post(door: Any, req: dict[str, Any]) -> dict[str, Any]:
    status, body, _headers = door.handle_post(json.dumps(req).encode())
    doc: dict[str, Any] = json.loads(body)
    doc["_status"] = status
    return doc


@pytest.mark.parametrize("breaks", ["contextId", "messageId", "no-parts", "empty-part"])
def test_door_shape_rung_caps_ids_and_refuses_empty_text(breaks: str) -> None:
    import time

    from tests.door_helpers import send_request

    door = _door()
    alice = SigningKey(b"\x0b" * 32)
    try:
        # oversized text too, so the shape rung must answer before the size rung
        text = "" if breaks in ("no-parts", "empty-part") else "x" * 70000
        req = send_request(alice, door.did, text, now=int(time.time()))
        msg = req["params"]["message"]
        if breaks == "contextId":
            msg["contextId"] = "c" * 257
        elif breaks == "messageId":
            msg["messageId"] = "m" * 257
        elif breaks == "no-parts":
            msg["parts"] = []
        doc = _post(door, req)
        assert doc["_status"] == 200 and doc["error"]["code"] == -32600, doc
        reason = {"contextId": "bad-context-id", "messageId": "bad-message-id"}.get(
            breaks, "empty-text")
        assert doc["error"]["data"] == {"reason": reason}
        assert door.store.inbox(None) == []
        ok = send_request(alice, door.did, "hi", ctx="c" * 256, mid="m" * 256)
        assert "result" in _post(door, ok)
    finally:
        door.store.close()
