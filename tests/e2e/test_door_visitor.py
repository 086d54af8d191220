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
        # oldest first; each DM without --context starts its own conversation
        assert [m["text"] for m in inbox["messages"]] == ["hello from the visitor", "and again"]
        assert len({m["contextId"] for m in inbox["messages"]}) == 2
        grants = json.loads(run("contact", "grants", "--as", "door", "--json").stdout)
        assert grants["grants"][0]["used"] == 1


def test_held_first_contact_is_not_a_failure() -> None:
    """Issue 12: held is exit 0 with state, requestId and messageId; recorded as pending;
    a resend after approval is not delivered twice; a new text while held is held too."""
    with live_door("quarantine") as door:
        new_identity("vis")
        sent = run("op", "--as", "vis", "dm", door.did, "knock knock", "--connect",
                   door.base, "--json")
        assert sent.exit_code == 0, (sent.stdout, sent.stderr)
        doc = json.loads(sent.stdout)
        assert doc["ok"] is True and doc["state"] == "held"
        listed = json.loads(run("op", "--as", "door", "requests", "list", "--json").stdout)
        assert [r["text"] for r in listed["requests"]] == ["knock knock"]
        rid = listed["requests"][0]["id"]
        assert doc["requestId"] == rid and doc["messageId"] == listed["requests"][0]["messageId"]
        # the visitor's store shows it pending
        mine = json.loads(run("op", "--as", "vis", "inbox", "--json").stdout)["messages"]
        assert [(m["direction"], m["state"]) for m in mine] == [("out", "held")]
        # a new text while held is held too, not dropped
        other = json.loads(run("op", "--as", "vis", "dm", door.did, "are you there?",
                               "--card-url", door.base, "--json").stdout)
        assert other["state"] == "held" and other["requestId"] == rid
        assert run("op", "--as", "door", "requests", "approve", rid).exit_code == 0
        # the same text again: not re-delivered, reported as the pending one
        again = json.loads(run("op", "--as", "vis", "dm", door.did, "knock knock",
                               "--json").stdout)
        assert again["state"] == "held" and again["alreadyHeld"] is True
        assert again["messageId"] == doc["messageId"]
        inbox = json.loads(run("op", "--as", "door", "inbox", "--json").stdout)
        assert sorted(m["text"] for m in inbox["messages"]) == ["are you there?", "knock knock"]
        human = run("op", "--as", "vis", "dm", door.did, "knock knock")
        assert human.exit_code == 0 and human.stdout.startswith("held for approval")
