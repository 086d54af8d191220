"""One SQLite store is one identity's (issue 22 item 5): two identities given the same
``--db`` / ``MURETAI_DB`` file do not share it; the second is refused, by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from muretai_cli.errors import InputError
from muretai_cli.inbox.store import open_identity_store
from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run, run_json

ALICE, BOB = SigningKey(b"\x51" * 32), SigningKey(b"\x52" * 32)


def test_a_store_file_opened_by_one_identity_is_refused_to_another(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    open_identity_store(ALICE.did, path).close()
    with pytest.raises(InputError) as refused:
        open_identity_store(BOB.did, path)
    assert refused.value.code == "store-of-another-identity"
    assert ALICE.did in refused.value.detail and BOB.did in refused.value.detail
    store = open_identity_store(ALICE.did, path)  # its own identity still opens it
    store.close()


def test_two_identities_on_one_muretai_db_never_see_each_others_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    new_identity("alice")
    new_identity("bob")
    monkeypatch.setenv("MURETAI_DB", str(tmp_path / "one.sqlite3"))
    code, doc = run_json("op", "--as", "alice", "inbox", "--json")
    assert code == 0 and doc["ok"] is True
    code, doc = run_json("op", "--as", "bob", "inbox", "--json")
    assert code == 2 and doc["ok"] is False
    assert doc["error"] == "store-of-another-identity"
    blocked = run("op", "--as", "bob", "senders", "block", ALICE.did)  # nothing of alice's
    assert blocked.exit_code == 2
    assert run("op", "--as", "alice", "inbox").exit_code == 0
