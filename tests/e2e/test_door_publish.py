"""What a door publishes besides its terms: the notice at its address (with the Link
signpost), supportedInterfaces, the owner's declared order (AE-30) and the owner's skills."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from muretai_cli.door.publish import AGENT_ENTRY_REL, load_skills, parse_prefer
from muretai_cli.errors import InputError
from muretai_cli.seam import verify_card_envelope
from muretai_cli.urls import CARD_PATH
from tests.cli_helpers import new_identity, run
from tests.door_helpers import local_door
from tests.servers import running, start_serve

SKILL = {"id": "book-table", "name": "Book a table", "description": "Reserve for tonight.",
         "tags": ["booking"], "examples": ["a table for two at eight"]}


@pytest.mark.parametrize("path", ["", "/support"])
def test_the_door_address_answers_a_notice_naming_the_card(path: str) -> None:
    with local_door("open", path=path) as door:
        card_url = door.base + CARD_PATH
        got = door.get(door.base if path else door.origin + "/")
        assert got.status_code == 200
        assert got.headers["content-type"].startswith("text/plain")
        assert door.did in got.text and card_url in got.text
        link = got.headers["link"]
        assert f'<{card_url}>; rel="service-desc"' in link
        assert f'<{card_url}>; rel="{AGENT_ENTRY_REL}"' in link
        head = door.request("HEAD", door.base if path else door.origin + "/")
        assert head.status_code == 200 and head.content == b"" and "link" in head.headers
        allow = door.request("OPTIONS", door.base if path else door.origin + "/")
        assert allow.headers["allow"] == "GET, HEAD, POST, OPTIONS"
        if path:  # the origin's front page is not this door's to answer (AE-4)
            assert door.get(door.origin + "/").status_code == 404


def test_the_card_carries_supported_interfaces_signed() -> None:
    with local_door("open", path="/support") as door:
        card = door.get(door.base + CARD_PATH).json()
        assert card["supportedInterfaces"] == [
            {"url": door.base, "protocolBinding": "JSONRPC", "protocolVersion": "0.2"}]
        env = door.get(door.base + "/.well-known/agent-card.sig.json").json()
        assert verify_card_envelope(env, expected_did=door.did) == card
        assert "prefer" not in card["agentEntry"], "no --prefer, no prefer key (AE-30)"


def test_prefer_parses_kinds_and_conditions_in_order() -> None:
    assert parse_prefer(["mcp", "page:no-key", "card"]) == (
        "mcp", {"kind": "page", "when": "no-key"}, "card")
    for bad in ("teleport", "page:always", "card:", ":key", "PAGE"):
        with pytest.raises(InputError) as info:
            parse_prefer([bad])
        assert info.value.code == "bad-prefer"


@pytest.mark.parametrize(("doc", "why"), [
    ({**SKILL, "id": ""}, "id"), ({**SKILL, "id": "a b"}, "id"),
    ({k: v for k, v in SKILL.items() if k != "tags"}, "tags"),
    ({**SKILL, "tags": "booking"}, "tags"), ({**SKILL, "tags": [1]}, "tags"),
    ({**SKILL, "name": "x" * 201}, "name"), ({**SKILL, "run": "rm -rf /"}, "unknown"),
    ({**SKILL, "id": "dm"}, "twice"), ([SKILL, SKILL], "twice"),
    ({**SKILL, "description": "a\x1b[2Jb"}, "control"), ("a skill", "object"),
])
def test_a_malformed_skill_is_refused_by_name(tmp_path: Path, doc: object, why: str) -> None:
    path = tmp_path / "skill.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        load_skills([path])
    assert info.value.code == "bad-skill" and why in info.value.detail


@pytest.mark.parametrize("raw", [b"\xef\xbb\xbf" + json.dumps(SKILL).encode(),
                                 b"[" * 100000 + b"]" * 100000, b"{\"id\":", b"\xff\xfe{",
                                 b" " * (300 * 1024)])
def test_a_hostile_skill_file_is_a_named_refusal(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "skill.json"
    path.write_bytes(raw)
    with pytest.raises(InputError) as info:
        load_skills([path])
    assert info.value.code == "bad-skill"


def test_serve_publishes_prefer_and_skills_on_card_and_envelope(tmp_path: Path) -> None:
    new_identity("door")
    skill = tmp_path / "skill.json"
    skill.write_text(json.dumps([SKILL]))
    with running(start_serve(tmp_path, "door", "--prefer", "page:no-key", "--prefer", "card",
                             "--skill", str(skill))) as served:
        card = httpx.get(served.base + CARD_PATH, timeout=5).json()
        env = httpx.get(served.base + "/.well-known/agent-card.sig.json", timeout=5).json()
    assert card["agentEntry"]["prefer"] == [{"kind": "page", "when": "no-key"}, "card"]
    assert "prefer" not in card["muretai"], "the legacy alias never carries prefer (AE-30)"
    assert env["card"] == card
    assert [s["id"] for s in card["skills"]] == ["dm", "book-table"]


@pytest.mark.parametrize(("args", "code"), [(["--prefer", "teleport"], "bad-prefer"),
                                            (["--skill", "/nonexistent/skill.json"],
                                             "unreadable-skill")])
def test_serve_refuses_to_start_with_a_bad_declaration(args: list[str], code: str) -> None:
    result = run("serve", "--url", "http://127.0.0.1:1", "--as", "nobody", *args)
    assert result.exit_code == 2 and code in result.stderr
