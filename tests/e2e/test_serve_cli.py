"""serve as people start it: the --url's port, settings checked up front, card fetch --save."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from muretai_cli.door.core import DoorConfig
from muretai_cli.errors import InputError
from muretai_cli.urls import parse_base_url
from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door
from tests.servers import running, start_muretai, start_serve, wait_until


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_listens_on_the_urls_port_without_port(tmp_path: Path) -> None:
    new_identity("door")
    port = _free_port()
    with running(start_muretai(tmp_path, "serve", "--as", "door", "--url",
                               f"http://127.0.0.1:{port}")) as served:
        assert served.base == f"http://127.0.0.1:{port}"
        card = httpx.get(f"{served.base}/.well-known/agent-card.json", timeout=5).json()
        assert card["url"] == f"http://127.0.0.1:{port}"
        # the policy said is the one in force (a new door quarantines), never "None"
        assert b"(policy quarantine, db " in served.log.read_bytes()


@pytest.mark.parametrize(("field", "value", "code"), [
    ("policy", "nope", "bad-policy"), ("rate_total", -1, "bad-limit"),
    ("max_connections", -5, "bad-limit"), ("slow_seconds", 0, "bad-limit"),
    ("rate_per_sender", True, "bad-limit"), ("name", "", "bad-name"),
])
def test_door_config_is_valid_on_construction(field: str, value: object, code: str) -> None:
    base = parse_base_url("https://door.example")
    DoorConfig(name="door", url=base)
    with pytest.raises(InputError) as info:
        DoorConfig(**{"name": "door", "url": base, field: value})  # type: ignore[arg-type]
    assert info.value.code == code and info.value.exit_code == 2


def test_serve_refuses_a_bad_setting_before_loading_anything() -> None:
    started = time.monotonic()
    result = run("serve", "--url", "http://127.0.0.1:1", "--rate-total", "-1", "--as", "nobody")
    assert result.exit_code == 2 and "bad-limit" in result.stderr
    assert "nobody" not in result.stderr, "the setting is judged before the identity"
    assert time.monotonic() - started < 30


def test_card_fetch_save_then_offline_check(tmp_path: Path) -> None:
    saved = tmp_path / "card.json"
    with live_door() as door:
        result = run("card", "fetch", door.base, "--save", str(saved), "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["saved"] == str(saved)
        result_doc = tmp_path / "result.json"
        result_doc.write_text(json.dumps({"_meta": {"handoff": {"v": 1, "next": [
            {"kind": "dm", "to": door.did}]}}}))
        base = door.base
    envelope = json.loads(saved.read_bytes())
    assert set(envelope) == {"v", "typ", "card", "ts", "sig"}
    check = run("handoff", "check", str(result_doc), "--origin", base, "--offline", "--card",
                str(saved), "--json")
    assert check.exit_code == 0, check.output
    assert json.loads(check.stdout)["results"][0]["card"]["signature"] == "verified"


def test_serve_json_streams_events_and_logs_arrivals(tmp_path: Path) -> None:
    from muretai_cli.seam import SigningKey
    from tests.door_helpers import send_request

    new_identity("door")
    out = tmp_path / "events.jsonl"

    def events(count: int) -> list[dict[str, Any]]:
        wait_until(lambda: out.read_text().count("\n") >= count, f"{count} events")
        return [json.loads(line) for line in out.read_text().splitlines()[:count]]

    with running(start_serve(tmp_path, "door", "--dm-policy", "quarantine", "--json",
                             stdout=out)) as served:
        listening = events(1)[0]
        assert listening["ok"] is True and listening["event"] == "listening"
        assert listening["address"] == served.base
        door_did = listening["did"]
        stranger = SigningKey(b"\x31" * 32)
        held = served.rpc(send_request(stranger, door_did, "hello"))
        assert held["error"]["code"] == -32014
        forged = send_request(stranger, door_did, "again")
        forged["params"]["message"]["metadata"]["sig"] = "A" * 86 + "=="
        assert "error" in served.rpc(forged)
        got = events(3)[1:]
        assert [(e["ok"], e["event"]) for e in got] == [(True, "held"), (False, "refused")]
        assert got[0]["from"] == stranger.did and got[0]["requestId"]
        assert got[1]["code"] == -32001 and got[1]["method"] == "message/send"
        request = got[0]["requestId"]
        assert run("op", "--as", "door", "requests", "approve", request).exit_code == 0
        assert "result" in served.rpc(send_request(stranger, door_did, "thanks"))
        accepted = events(4)[3]
        assert (accepted["ok"], accepted["event"], accepted["from"]) == (True, "accepted",
                                                                         stranger.did)
    log = served.log
    logged = log.read_text()
    assert " held     message/send from " + stranger.did in logged
    assert " refused  message/send from " in logged and " UTC " in logged
