"""``op dm … --wait-reply [S]``: its spellings, its bounds, and what a reply scope is."""

from __future__ import annotations

import pytest

from muretai_cli.cli import _split_wait
from muretai_cli.cli._opdoor import wait_seconds
from muretai_cli.errors import InputError
from muretai_cli.visit.replies import ReplyScope


def test_wait_reply_equals_n_is_wait_reply_n() -> None:
    assert _split_wait(["op", "dm", "D", "hi", "--wait-reply=5"]) == [
        "op", "dm", "D", "hi", "--wait-reply", "5"]
    # after --, it is the message's text, as it is
    assert _split_wait(["op", "dm", "D", "--", "--wait-reply=5"]) == [
        "op", "dm", "D", "--", "--wait-reply=5"]


def test_its_seconds() -> None:
    assert wait_seconds(True, []) == 25
    assert wait_seconds(True, ["5"]) == 5
    assert wait_seconds(False, []) == 0
    with pytest.raises(InputError):
        wait_seconds(True, ["31"])
    with pytest.raises(InputError):
        wait_seconds(False, ["5"])  # seconds without the flag: a stray argument


def test_a_scope_names_the_message_or_the_conversation() -> None:
    assert ReplyScope("did:key:z6MkA", "m-1").filters == {
        "peer": "did:key:z6MkA", "context": None, "reply_to": "m-1"}
    assert ReplyScope("did:key:z6MkA", "m-1", "c-1").filters == {
        "peer": "did:key:z6MkA", "context": "c-1", "reply_to": None}
    with pytest.raises(ValueError, match="names"):
        ReplyScope("did:key:z6MkA")
