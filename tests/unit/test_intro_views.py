"""What the views make of introductions: a request marked as one (with its note), and the
MCP results' cleaning of what hides or reorders text in a vouch."""

from __future__ import annotations

from typing import Any

from muretai_cli.inbox.vouches import NO_VOUCH_BOOK, mark_requests
from muretai_cli.mcp._results import clean

CAROL, BOB = "did:key:z6MkCarol", "did:key:z6MkBob"


def test_a_request_and_its_note_are_marked_and_other_text_is_not() -> None:
    entries: list[dict[str, Any]] = [
        {"from": CAROL, "contextId": "c1", "text": f"introduce-me-to:{BOB}"},
        {"from": BOB, "contextId": "c1", "text": "not her note"},
        {"from": CAROL, "contextId": "c1", "text": "about ledgers"},
        {"from": CAROL, "contextId": "c2", "text": "introduce-me-to: not a DID"},
        {"peer": CAROL, "direction": "out", "contextId": "c3",
         "text": f"introduce-me-to:{BOB}"},
    ]
    mark_requests(entries)
    assert entries[0]["introductionRequest"] == {"from": CAROL, "for": BOB,
                                                 "note": "about ledgers"}
    assert [("introductionRequest" in e) for e in entries] == [True, False, False, False, False]


def test_mcp_results_drop_zero_width_and_bidi_characters() -> None:
    hostile = {"vouch": {"expertise": ["led\u200bgers\u202e\u2066", "\ufeffx\u2060y\u061c"]}}
    assert clean(hostile) == {"vouch": {"expertise": ["ledgers", "xy"]}}


def test_the_default_book_revokes_nothing_and_knows_no_proposal() -> None:
    assert NO_VOUCH_BOOK.revoked("did:key:z6MkA", "urn:uuid:1", None) is False
    assert NO_VOUCH_BOOK.proposal("urn:uuid:1") is None
