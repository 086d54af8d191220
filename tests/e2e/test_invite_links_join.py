"""``invite accept`` (the alias of ``join``) through a real door, with the invite pasted as
muretai's https link form: the claim lands and the joiner is the inviter's contact."""

from __future__ import annotations

import json

from muretai_cli.inbox.invites import InviteStore
from tests.cli_helpers import new_identity, run, run_json
from tests.door_helpers import live_door


def test_invite_accept_with_an_https_link_joins_through_a_door() -> None:
    new_identity("jo")
    with live_door("quarantine", name="ines") as door:
        made = json.loads(run("invite", "create", "--as", "ines", "--url", door.base,
                              "--json").stdout)
        link = "https://muretai.com/invitation#d=" + made["link"].removeprefix(
            "agent://invite?d=")
        code, doc = run_json("invite", "accept", link, "--as", "jo")
        assert code == 0, doc
        store = door.store()
        try:
            contact = InviteStore(store.db).contact(doc["claim"]["joiner"])
            assert contact is not None and contact.name == "jo"
        finally:
            store.close()
