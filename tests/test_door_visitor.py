"""The project's own visitor (``op contact dm``) against the running door: card, grant,
redeem, one signed POST, a verified reply; and the door's refusals as exit 4."""

from __future__ import annotations

import json

from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door


def test_op_contact_dm_through_a_grant() -> None:
    with live_door("closed", path="/desk") as door:
        issued = run("contact", "issue", "--as", "door", "--uses", "2", "--expires", "1h")
        assert issued.exit_code == 0, issued.stderr
        new_identity("vis")
        sent = run("op", "--as", "vis", "contact", "dm", door.did, "hello from the visitor",
                   "--connect", door.base, "--json")
        assert sent.exit_code == 0, (sent.stdout, sent.stderr)
        assert json.loads(sent.stdout)["ok"] is True
        again = run("op", "--as", "vis", "contact", "dm", door.did, "and again", "--json")
        assert again.exit_code == 0, (again.stdout, again.stderr)
        inbox = json.loads(run("op", "--as", "door", "inbox", "--json").stdout)
        assert [m["text"] for m in inbox["messages"]] == ["and again", "hello from the visitor"]
        grants = json.loads(run("contact", "grants", "--as", "door", "--json").stdout)
        assert grants["grants"][0]["used"] == 1


def test_op_contact_dm_held_is_exit_4() -> None:
    with live_door("quarantine") as door:
        new_identity("vis")
        sent = run("op", "--as", "vis", "contact", "dm", door.did, "knock knock",
                   "--connect", door.base)
        assert sent.exit_code == 4, (sent.stdout, sent.stderr)
        listed = json.loads(run("op", "--as", "door", "requests", "list", "--json").stdout)
        assert [r["text"] for r in listed["requests"]] == ["knock knock"]
