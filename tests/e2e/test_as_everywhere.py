"""``--as NAME|DID`` and ``$MURETAI_AS`` on every command that acts as an identity, and names
for DIDs through the one ``did_option``: a test per command family."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from muretai_cli.seam import parse_document
from tests.cli_helpers import new_identity, run


@pytest.fixture
def me(monkeypatch: pytest.MonkeyPatch) -> str:
    """Two identities, ``me`` (the default through $MURETAI_AS) and ``other``."""
    new_identity("other")
    did = new_identity("me")
    monkeypatch.setenv("MURETAI_AS", "me")
    return did


def _doc(*args: str) -> dict[str, object]:
    result = run(*args)
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def test_as_takes_a_did_and_an_unknown_one_is_a_usage_error(me: str) -> None:
    grant = _doc("op", "--as", me, "contact", "issue", "--uses", "1", "--json")["grant"]
    assert isinstance(grant, dict) and grant["did"] == me
    result = run("op", "contact", "grants", "--as", "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2Qt"
                 "KLGpbnnEGta2doK", "--json")
    assert result.exit_code == 2 and "no-such-identity" in result.stdout


def test_invite_family(me: str) -> None:
    created = _doc("invite", "create", "--url", "https://me.example", "--json")
    invite = created["invite"]
    assert isinstance(invite, dict) and invite["did"] == me
    listed = _doc("invite", "list", "--as", me, "--json")
    assert listed["as"] == "me" and len(listed["invites"]) == 1  # type: ignore[arg-type]
    assert _doc("invite", "contacts", "--json")["as"] == "me"
    # join acts as $MURETAI_AS too: joining one's own invite is refused before any network
    for extra in ([], ["--as", me]):
        result = run("join", str(created["text"]), *extra, "--json")
        assert result.exit_code == 2 and "own-invite" in result.stdout, result.output
    revoked = _doc("invite", "revoke", str(created["nonce"]), "--json")
    assert revoked["nonce"] == created["nonce"]


def test_db_family(me: str) -> None:
    doc = _doc("db", "init", "--json")
    assert doc["store"] == "door" and doc["did"] == me
    doc = _doc("db", "status", "--as", me, "--json")
    assert doc["did"] == me and doc["schemaVersion"] == doc["expected"]
    result = run("db", "status", "--relay", "--as", "me", "--json")
    assert result.exit_code == 2, "one store: --as and --relay together is a usage error"
    result = run("db", "status", "--relay", "--json")  # $MURETAI_AS does not override --relay
    assert json.loads(result.stdout)["store"] == "relay"


def test_card_publish_acts_as_muretai_as(me: str) -> None:
    for extra in ([], ["--as", me]):
        result = run("card", "publish", *extra, "--json")
        assert result.exit_code == 2 and "no-relay" in result.stdout
        assert "me has no relay" in result.stdout, result.stdout


def test_sign_key_records(me: str) -> None:
    other = parse_document(run("id", "show", "other", "--json").stdout.encode())["did"]
    keystate = _doc("sign", "keystate", "--op", "other")  # the root: $MURETAI_AS
    assert keystate["rootDid"] == me and keystate["opDid"] == other
    keystate = _doc("sign", "keystate", "--as", me, "--op", str(other))
    assert keystate["epoch"] == 2, "the DID finds the same identity's minted records"
    owner = _doc("sign", "owner-state", "--revoke", "other")
    assert owner["rootDid"] == me and owner["revoked"] == [other], "a name resolves to its DID"
    binding = _doc("sign", "binding", "--device", str(other))
    assert binding["rootDid"] == me and binding["deviceDid"] == other
    result = run("sign", "binding", "--device", "nobody-here")
    assert result.exit_code == 2


def test_doctor_as_a_did(me: str) -> None:
    doc = _doc("doctor", "--as", me, "--json")
    checks = [c["check"] for c in doc["checks"]]  # type: ignore[attr-defined]
    assert "identity me" in checks and "identity other" not in checks


def test_wba_signs_as_muretai_as(me: str, monkeypatch: pytest.MonkeyPatch,
                                 tmp_path: Path) -> None:
    from tests.door_helpers import live_door

    with live_door() as door:
        result = run("card", "fetch", door.base, "--wba", "--json")
        assert result.exit_code == 0, result.output
        monkeypatch.delenv("MURETAI_AS")
        result = run("card", "fetch", door.base, "--wba", "--json")
    assert result.exit_code == 2 and "wba-needs-identity" in result.stdout


def test_a_contact_name_stands_for_its_did_as_the_identity_that_knows_it(me: str) -> None:
    from muretai_cli.home import KeyStore, keys_dir
    from muretai_cli.inbox.invites import Contact, InviteStore
    from muretai_cli.inbox.store import open_identity_store
    from muretai_cli.seam import SigningKey

    bob, mallory = SigningKey.generate().did, SigningKey.generate().did
    assert _doc("db", "init", "--json")["did"] == me
    store = open_identity_store(KeyStore(keys_dir()).load("me").did, None)
    try:
        invites = InviteStore(store.db)
        invites.add_contact(Contact(bob, "Bob", None, None, "https://bob.example", 1, "joined"))
        invites.add_contact(Contact(mallory, "other", None, None, None, 1, "joined"))
    finally:
        store.close()
    # the name a contact gave itself (its own words) names nothing
    result = run("op", "senders", "allow", "bob", "--json")
    assert result.exit_code == 2 and "bad-did" in result.stdout, result.output
    # the owner's name for it does
    assert run("op", "contact", "name", bob, "Bob").exit_code == 0
    result = run("op", "senders", "allow", "bob", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["did"] == bob and "your contact Bob" in result.stderr
    # a contact's claimed name never takes an identity's place: "other" is the identity
    result = run("op", "senders", "block", "other", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["did"] != mallory
    result = run("op", "--as", "other", "senders", "allow", "bob", "--json")
    assert result.exit_code == 2 and "bad-did" in result.stdout, "contacts are per identity"
