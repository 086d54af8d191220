"""Peer text shown to a person: nothing in it may reorder, break or hide what the terminal shows.

Bidi marks (U+061C among them), line/paragraph separators in single-line fields, and invisible
characters (zero width space, BOM, tag characters that hide text from a person but not from a
model) all become a visible '?'; ``--json`` carries them as ``\\u`` escapes of the same value.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from muretai_cli.artifacts.message import build_message_send, signed_message
from muretai_cli.seam import SigningKey
from tests.cli_helpers import run, run_json
from tests.door_helpers import live_door, send_request

SENDER = SigningKey(bytes([7]) * 32)
ME = SigningKey(bytes([8]) * 32)
NOW = 1_800_000_000
# each one alone must be caught: the test names the one that got through
HOSTILE = ["\u061c", "\u200e", "\u202e", "\u2067", "\u2028", "\u2029", "\ufeff", "\u200b",
           "\u2060", "\u00ad", "\U000e0041", "\U000e007f", "\U000e0100", "\x1b", "\x9b"]
TEXT = "pay " + "".join(f"{c}x{i}" for i, c in enumerate(HOSTILE)) + " now"


def _leaks(out: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in HOSTILE if c in out]


def test_verify_message_shows_hostile_text_inertly() -> None:
    request = json.dumps(build_message_send(signed_message(SENDER, to=ME.did, text=TEXT,
                                                           now=NOW)))
    result = run("verify", "message", "-", "--to", ME.did, "--now", str(NOW), input=request)
    assert result.exit_code == 0, result.output
    assert _leaks(result.stdout + result.stderr) == []
    result = run("verify", "message", "-", "--to", ME.did, "--now", str(NOW), "--json",
                 input=request)
    assert _leaks(result.stdout) == []
    assert json.loads(result.stdout)["results"][0]["text"] == TEXT  # the same value


def test_card_fetch_shows_a_hostile_name_on_one_line() -> None:
    with live_door("open") as door:
        # the door's own name is an identity name (plain); give its card a hostile one
        door.door.config = dataclasses.replace(door.door.config, name=TEXT)
        door.door.published.config = door.door.config  # the card is built from its own copy
        door.door.published._card_rev = None  # rebuilt and re-signed on the next GET
        result = run("card", "fetch", door.base, "--did", door.did)
        assert result.exit_code == 0, result.output
        assert _leaks(result.stdout + result.stderr) == []
        name_lines = [line for line in result.stdout.splitlines() if "pay " in line]
        assert len(name_lines) == 1 and "now" in name_lines[0]  # U+2028/9 broke no line


@pytest.mark.parametrize("flag", [[], ["--all"]])
def test_op_inbox_shows_hostile_text_inertly(flag: list[str]) -> None:
    with live_door("open") as door:
        assert "result" in door.rpc(send_request(SENDER, door.did, TEXT, ctx="c\u2028\ufeff"))
        out = run("op", "--as", "door", "inbox", *flag)
        assert out.exit_code == 0 and "x0" in out.stdout
        assert _leaks(out.stdout + out.stderr) == []
        code, doc = run_json("op", "--as", "door", "inbox", *flag)
        assert code == 0 and doc["messages"][-1]["text"] == TEXT
