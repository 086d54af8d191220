"""Invites end to end: create/list/revoke/verify, claims at the inviter, join through a door."""

from __future__ import annotations

import copy
import json
import threading
import time
from typing import Any

import pytest

from muretai_cli.artifacts.invite import build_claim, claim_binding, mint_invite, verify_invite
from muretai_cli.errors import Refused
from muretai_cli.home import KeyStore, keys_dir
from muretai_cli.inbox.claims import process_claim
from muretai_cli.inbox.invites import Contact, InviteStore
from muretai_cli.inbox.store import IdentityStore, db_path
from muretai_cli.seam import SigningKey, sign_envelope
from tests.cli_helpers import new_identity, run, run_json
from tests.door_helpers import code_of, live_door


def _key(name: str) -> SigningKey:
    store = KeyStore(keys_dir())
    ident = store.load(name) if store.path_of(name).exists() else store.create(name)
    return ident.signing_key()


def _store(key: SigningKey) -> IdentityStore:
    return IdentityStore(db_path(key.did))


def _issue(inviter: SigningKey, *, uses: int = 1, ttl: int = 3600,
           now: int | None = None) -> dict[str, Any]:
    now = int(time.time()) if now is None else now
    card = mint_invite(inviter, name="Ines", exp=now + ttl, url="http://127.0.0.1:9/",
                       enc_pub=inviter.enc_pub)
    store = _store(inviter)
    InviteStore(store.db).add(card, uses=uses, exp=now + ttl, now=now)
    store.close()
    return card


def _claim(joiner: SigningKey, card: dict[str, Any], *, now: int | None = None,
           **kw: Any) -> dict[str, Any]:
    now = int(time.time()) if now is None else now
    invite = verify_invite(card, now=now)
    return build_claim(joiner, invite=invite, name=kw.pop("name", "Jo"), now=now,
                       enc_pub=joiner.enc_pub, **kw)


def _raw_claim(joiner: SigningKey, to: str, nonce: str) -> dict[str, Any]:
    """A well-signed claim to ``to`` presenting any nonce (no invite needed to write one)."""
    context = claim_binding(nonce=nonce, name="Jo", enc_pub=None, relay=None, url=None)
    message = sign_envelope(joiner, to=to, text="onboard/claim", timestamp=int(time.time()),
                            context_id=context)
    return {"method": "onboard/claim", "message": message, "nonce": nonce, "name": "Jo"}


def _refused(claim: object, inviter: SigningKey, *, later: int = 0) -> str:
    store = _store(inviter)
    try:
        with pytest.raises(Refused) as info:
            process_claim(claim, me=inviter.did, store=store, now=int(time.time()) + later)
    finally:
        store.close()
    return info.value.code


def _state(inviter: SigningKey, joiner: SigningKey) -> tuple[Any, ...]:
    store = _store(inviter)
    try:
        inv = InviteStore(store.db)
        return (inv.contact(joiner.did), store.sender_status(joiner.did),
                [(r.nonce, r.used) for r in inv.invites()])
    finally:
        store.close()


# -- the inviter's side ---------------------------------------------------------------------


def test_a_claim_makes_the_joiner_a_contact_and_an_allowed_sender() -> None:
    ines, jo = _key("ines"), _key("jo")
    card = _issue(ines)
    store = _store(ines)
    joined = process_claim(_claim(jo, card), me=ines.did, store=store, now=int(time.time()))
    store.close()
    assert joined.new_contact and joined.claim.name == "Jo"
    contact, status, invites = _state(ines, jo)
    assert contact.name == "Jo" and contact.enc_pub == jo.enc_pub and status == "allowed"
    assert invites == [(card["nonce"], 1)]


def test_failing_claims_change_nothing() -> None:
    ines, jo, eve = _key("ines"), _key("jo"), _key("eve")
    card = _issue(ines)
    before = _state(ines, jo)
    unsigned = copy.deepcopy(_claim(jo, card))
    unsigned["message"]["sig"] = eve.sign(b"x")
    assert _refused(unsigned, ines) == "bad-signature"
    assert _refused({**_claim(jo, card), "nonce": "f" * 32}, ines) == "claim-fields-altered"
    foreign = _issue(_key("otto"))   # a nonce another identity issued
    assert _refused(_claim(jo, foreign), ines) == "wrong-recipient"
    assert _refused(_raw_claim(jo, ines.did, foreign["nonce"]), ines) == "unknown-nonce"
    assert _state(ines, jo) == before


def test_expired_revoked_and_used_up_invites_are_refused() -> None:
    ines, jo, kim = _key("ines"), _key("jo"), _key("kim")
    card = _issue(ines)
    store = _store(ines)
    InviteStore(store.db).revoke(card["nonce"], int(time.time()))
    store.close()
    assert _refused(_claim(jo, card), ines) == "revoked-invite"
    card = _issue(ines, uses=1)
    store = _store(ines)
    process_claim(_claim(jo, card), me=ines.did, store=store, now=int(time.time()))
    # the same joiner again spends nothing more; another one finds it used up
    process_claim(_claim(jo, card), me=ines.did, store=store, now=int(time.time()))
    store.close()
    assert _refused(_claim(kim, card), ines) == "invite-used-up"
    assert _state(ines, kim)[0] is None and _state(ines, kim)[1] is None
    # issued and claimed on one clock reading (a second turning over between them under
    # load made the claim itself expired); judged two seconds later
    now = int(time.time())
    short = _issue(ines, ttl=1, now=now)
    assert _refused(_claim(jo, short, now=now), ines, later=2) == "expired-invite"


def test_a_claim_never_overwrites_a_known_contact() -> None:
    ines, jo = _key("ines"), _key("jo")
    store = _store(ines)
    InviteStore(store.db).add_contact(Contact(jo.did, "Jo", "https://relay.one", "a" * 64,
                                              None, 1, "joined-invite"))
    store.close()
    card = _issue(ines)
    store = _store(ines)
    joined = process_claim(_claim(jo, card, relay="https://attacker.example", name="Admin"),
                           me=ines.did, store=store, now=int(time.time()))
    store.close()
    assert not joined.new_contact
    contact = _state(ines, jo)[0]
    assert (contact.relay, contact.enc_pub, contact.name) == ("https://relay.one", "a" * 64,
                                                             "Jo")


def test_a_blocked_sender_stays_blocked_and_spends_nothing() -> None:
    ines, jo = _key("ines"), _key("jo")
    card = _issue(ines)
    store = _store(ines)
    store.set_sender(jo.did, "blocked", int(time.time()))
    store.close()
    assert _refused(_claim(jo, card), ines) == "blocked"
    assert _state(ines, jo)[2] == [(card["nonce"], 0)]


def test_a_claim_is_one_transaction_spend_contact_and_allowed_sender(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a failure at the last write (making the joiner an allowed sender) undoes the spend and
    # the contact too: a claim never leaves a contact that is not an allowed sender
    ines, jo = _key("ines"), _key("jo")
    card = _issue(ines)
    before = _state(ines, jo)

    def broken_log(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk gone")

    with monkeypatch.context() as patched:
        patched.setattr(IdentityStore, "_log", broken_log)
        store = _store(ines)
        with pytest.raises(RuntimeError):
            process_claim(_claim(jo, card), me=ines.did, store=store, now=int(time.time()))
        store.close()
    assert _state(ines, jo) == before
    store = _store(ines)     # and the same claim, retried, goes through whole
    assert process_claim(_claim(jo, card), me=ines.did, store=store,
                         now=int(time.time())).new_contact
    store.close()
    contact, status, invites = _state(ines, jo)
    assert contact is not None and status == "allowed" and invites == [(card["nonce"], 1)]


def test_two_claims_racing_for_the_last_use_one_wins(backend: str) -> None:
    from tests.store_helpers import door_store

    ines = _key("ines")
    joiners = [_key(f"j{i}") for i in range(4)]
    now = int(time.time())
    card = mint_invite(ines, name="Ines", exp=now + 3600, url="http://127.0.0.1:9/")
    first = door_store(ines.did, backend)
    InviteStore(first.db).add(card, uses=1, exp=now + 3600, now=now)
    first.close()
    claims = [_claim(j, card) for j in joiners]
    results: list[str] = []
    barrier = threading.Barrier(len(claims))

    def go(claim: dict[str, Any]) -> None:
        store = door_store(ines.did, backend)
        barrier.wait()
        try:
            process_claim(claim, me=ines.did, store=store, now=int(time.time()))
            results.append("won")
        except Refused as exc:
            results.append(exc.code)
        finally:
            store.close()

    threads = [threading.Thread(target=go, args=(c,)) for c in claims]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["invite-used-up"] * 3 + ["won"]
    store = door_store(ines.did, backend)
    assert len(InviteStore(store.db).contacts()) == 1
    assert [r.used for r in InviteStore(store.db).invites()] == [1]
    store.close()


# -- the command line ------------------------------------------------------------------------


def test_invite_create_list_verify_revoke() -> None:
    new_identity("ines")
    result = run("invite", "create", "--as", "ines", "--url", "http://127.0.0.1:9/",
                 "--uses", "2", "--ttl", "1h")
    assert result.exit_code == 0, result.stderr
    card_line, text, link = result.stdout.strip().splitlines()
    card = json.loads(card_line)
    assert text.startswith("muretai:invite:") and len(card["nonce"]) == 32
    assert link == "agent://invite?d=" + text.removeprefix("muretai:invite:")
    code, doc = run_json("invite", "verify", text)
    assert code == 0 and doc["did"] == card["did"] and doc["nonce"] == card["nonce"]
    code, doc = run_json("invite", "verify", text, "--now", str(int(time.time()) + 3601))
    assert code == 1 and doc["error"] == "expired-invite"
    code, doc = run_json("invite", "list", "--as", "ines")
    assert [(i["nonce"], i["usesLeft"]) for i in doc["invites"]] == [(card["nonce"], 2)]
    assert run("invite", "revoke", "--as", "ines", card["nonce"]).exit_code == 0
    assert run_json("invite", "list", "--as", "ines")[1]["invites"] == []
    assert run("invite", "revoke", "--as", "ines", "0" * 32).exit_code == 2


def test_invite_create_needs_an_address_and_verify_refuses_edits(tmp_path: Any) -> None:
    new_identity("ines")
    result = run("invite", "create", "--as", "ines")
    assert result.exit_code == 2 and "unreachable-identity" in result.stderr
    result = run("invite", "create", "--as", "ines", "--relay", "http://127.0.0.1:9",
                 "--json")
    card = json.loads(result.stdout)["invite"]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps({**card, "relay": "https://attacker.example"}))
    code, doc = run_json("invite", "verify", str(edited))
    assert code == 1 and doc["error"] == "bad-signature"


def test_join_through_a_door_then_talk() -> None:
    new_identity("jo")
    with live_door("quarantine", name="ines") as door:
        result = run("invite", "create", "--as", "ines", "--url", door.base, "--json")
        text = json.loads(result.stdout)["text"]
        code, doc = run_json("join", text, "--as", "jo", "--message", "hello Ines")
        assert code == 0, doc
        assert doc["claim"]["joiner"] == doc["message"]["to"] or doc["inviter"] == door.did
        assert doc["message"]["receipt"]["verified"] is True  # the door's receipt
        store = door.store()
        try:
            inv = InviteStore(store.db)
            jo_did = doc["claim"]["joiner"]
            assert inv.contact(jo_did).name == "jo"         # type: ignore[union-attr]
            assert store.sender_status(jo_did) == "allowed"
            assert [m["text"] for m in store.inbox()] == ["hello Ines"]  # not held
        finally:
            store.close()
        code, listing = run_json("invite", "contacts", "--as", "jo")
        assert [(c["did"], c["how"]) for c in listing["contacts"]] == [(door.did,
                                                                        "joined-invite")]
        code, listing = run_json("invite", "contacts", "--as", "ines")
        assert [(c["name"], c["how"]) for c in listing["contacts"]] == [("jo",
                                                                         "claimed-invite")]
        # the same invite (one use) cannot bring in a second joiner
        new_identity("kim")
        result = run("join", text, "--as", "kim", "--json")
        doc = json.loads(result.stdout)
        assert result.exit_code == 4 and doc["rpcError"]["data"]["reason"] == "invite-used-up"
        assert "kim has no relay" in result.stderr   # said, on stderr only


def test_door_answers_a_forged_claim_with_its_rule_and_changes_nothing() -> None:
    events: list[dict[str, Any]] = []
    with live_door("quarantine", name="ines", on_event=events.append) as door:
        card = _issue(door.key)
        jo, eve = _key("jo"), _key("eve")
        claim = copy.deepcopy(_claim(jo, card))
        claim["message"]["sig"] = eve.sign(b"x")
        doc = door.rpc({"jsonrpc": "2.0", "id": 1, "method": "onboard/claim",
                        "params": claim})
        assert code_of(doc) == -32001
        assert _state(door.key, jo)[:2] == (None, None)
        ok = door.rpc({"jsonrpc": "2.0", "id": 2, "method": "onboard/claim",
                       "params": _claim(jo, card)})
        assert ok["result"]["ok"] is True and ok["result"]["joiner"] == jo.did
        # the door's log names the claimed sender of a claim (its message's from)
        assert [(e["event"], e["method"], e["from"]) for e in events] == [
            ("refused", "onboard/claim", jo.did), ("accepted", "onboard/claim", jo.did)]


def test_door_charges_claims_to_the_signer_rate_limit() -> None:
    with live_door("quarantine", name="ines", rate_per_sender=1) as door:
        card = _issue(door.key, uses=5)
        jo = _key("jo")
        first = door.rpc({"jsonrpc": "2.0", "id": 1, "method": "onboard/claim",
                          "params": _claim(jo, card)})
        assert first["result"]["ok"] is True
        second = door.rpc({"jsonrpc": "2.0", "id": 2, "method": "onboard/claim",
                           "params": _claim(jo, card)})
        assert code_of(second) == -32004 and second["_status"] == 429


def test_join_through_a_relay_then_talk(tmp_path: Any) -> None:
    """Two shell identities on one relay meet through an invite: the claim and the first
    message are sealed deposits; the inviter's turn-check honours the claim first, so the
    message is not held."""
    from tests.relay_helpers import live_relay

    def j(*args: str) -> tuple[int, dict[str, Any]]:
        out = run(*args, "--json")
        assert out.stdout, out.stderr
        return out.exit_code, json.loads(out.stdout)

    with live_relay(tmp_path / "relay.sqlite3") as relay:
        dids = {}
        for name in ("ines", "jo", "kim"):
            dids[name] = new_identity(name)
            assert run("id", "relay", name, relay.url).exit_code == 0
            assert j("card", "publish", "--as", name)[0] == 0
        code, made = j("invite", "create", "--as", "ines")   # the relay from id relay
        assert code == 0 and made["invite"]["relay"] == relay.url and made["invite"]["url"] == ""
        # the name a joiner gives is its own words: untrusted text, shown stripped
        given = "Jo\x1b[2J\x07 the builder"
        code, joined = j("join", made["text"], "--as", "jo", "--message", "hello Ines",
                         "--name", given)
        assert code == 0, joined
        assert joined["claim"]["queued"] is True and joined["message"]["state"] == "queued"
        drain_out = run("op", "--as", "ines", "turn-check")
        assert drain_out.exit_code == 0, drain_out.stderr
        assert "\x1b" not in drain_out.stdout and "\x07" not in drain_out.stdout
        assert f"joined through your invite: {dids['jo']}, who gives the name " \
               "'Jo?[2J? the builder'" in drain_out.stdout
        assert "| hello Ines" in drain_out.stdout                 # the claim came first:
        assert "HELD" not in drain_out.stdout and "refused" not in drain_out.stdout  # not held
        code, listing = j("invite", "contacts", "--as", "ines")
        assert [(c["did"], c["name"]) for c in listing["contacts"]] == [(dids["jo"], given)]
        code, listing = j("invite", "contacts", "--as", "jo")   # the inviter, from the invite
        assert [(c["did"], c["relay"], c["encPub"], c["url"], c["how"])
                for c in listing["contacts"]] == [(dids["ines"], relay.url,
                                                   made["invite"]["enc_pub"], None,
                                                   "joined-invite")]
        shown = run("invite", "contacts", "--as", "ines").stdout
        assert "'Jo?[2J? the builder' (their words)" in shown and "\x1b" not in shown
        # a second joiner on the one-use invite: its claim is refused and reported with its
        # reason, its message waits in quarantine, and nothing about jo changes
        again = run("join", made["text"], "--as", "kim", "--message", "me too")
        assert again.exit_code == 0, again.stderr
        assert "claim queued for" in again.stdout and "message queued" in again.stdout
        assert "delivered" not in again.stdout and "verified" not in again.stdout
        code, drained = j("op", "--as", "ines", "turn-check")
        assert [(r["from"], r["reason"]["code"]) for r in drained["refused"]] == [
            (dids["kim"], "invite-used-up")]
        assert [(m["from"], m["text"]) for m in drained["held"]] == [(dids["kim"], "me too")]
        assert drained["joined"] == [] and drained["messages"] == []
        code, listing = j("invite", "contacts", "--as", "ines")
        assert [c["did"] for c in listing["contacts"]] == [dids["jo"]]
        # jo, already a contact, claims a new invite under another name: honoured (a use is
        # spent), reported as a known contact, and the contact is kept as it was
        code, second = j("invite", "create", "--as", "ines")
        assert j("join", second["text"], "--as", "jo", "--name", "Admin")[0] == 0
        code, drained = j("op", "--as", "ines", "turn-check")
        assert [(e["from"], e["name"], e["newContact"]) for e in drained["joined"]] == [
            (dids["jo"], "Admin", False)]
        code, listing = j("invite", "contacts", "--as", "ines")
        assert [(c["did"], c["name"]) for c in listing["contacts"]] == [(dids["jo"], given)]


def test_a_relayed_claim_must_be_deposited_by_its_signer() -> None:
    from muretai_cli.inbox.relayed import receive
    from muretai_cli.seam import canonical_bytes, seal_box

    ines, jo, eve = _key("ines"), _key("jo"), _key("eve")
    card = _issue(ines)
    request = {"jsonrpc": "2.0", "id": 1, "method": "onboard/claim",
               "params": _claim(jo, card)}

    def deposit(by: SigningKey, deposit_id: str) -> str:
        store = _store(ines)
        try:
            return receive(store, ines, "quarantine", deposit_id=deposit_id, sender=by.did,
                           from_enc=by.enc_pub, now=int(time.time()),
                           blob=seal_box(by, ines.enc_pub, canonical_bytes(request),
                                         ad=b"")).outcome
        finally:
            store.close()

    assert deposit(eve, "d1") == "refused"          # jo's claim, replayed by eve
    assert _state(ines, jo)[:2] == (None, None)
    assert deposit(jo, "d2") == "joined"
    assert _state(ines, jo)[1] == "allowed"


def test_a_relayed_claim_meeting_a_database_failure_is_raised_not_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # recorded as refused it would be acknowledged and gone from the relay for good
    from muretai_cli.db import DatabaseUnavailable
    from muretai_cli.inbox import invites
    from muretai_cli.inbox.relayed import receive
    from muretai_cli.seam import canonical_bytes, seal_box

    ines, jo = _key("ines"), _key("jo")
    card = _issue(ines)
    request = {"jsonrpc": "2.0", "id": 1, "method": "onboard/claim",
               "params": _claim(jo, card)}

    def gone(*args: Any, **kwargs: Any) -> None:
        raise DatabaseUnavailable("database-unavailable", "the disk went away")

    store = _store(ines)
    try:
        with monkeypatch.context() as patched:
            patched.setattr(invites, "spend_use", gone)
            with pytest.raises(DatabaseUnavailable):
                receive(store, ines, "quarantine", deposit_id="d1", sender=jo.did,
                        from_enc=jo.enc_pub, now=int(time.time()),
                        blob=seal_box(jo, ines.enc_pub, canonical_bytes(request), ad=b""))
        assert not store.deposit_seen(jo.did, "d1")      # nothing recorded: given again
    finally:
        store.close()
    assert _state(ines, jo)[:2] == (None, None)


def test_a_sqlite_file_whose_invite_tables_came_first_upgrades_in_place(tmp_path: Any) -> None:
    # the release before kept the invite tables apart (created on first use): a file at
    # door version 4 that already holds them reaches the latest version with its invites intact
    import sqlite3

    from muretai_cli.inbox.store import door_schema

    path = tmp_path / "door.sqlite3"
    store = IdentityStore(path)
    InviteStore(store.db).add({"nonce": "n-1", "name": "a"}, uses=1, exp=2**40, now=1)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE muretai_schema SET version=4 WHERE store='door'")
        for table in ("inbox", "requests"):  # what version 6 adds, a v4 file lacks
            conn.execute(f"ALTER TABLE {table} DROP COLUMN wba")
        conn.execute("DROP INDEX relayed_shown")  # and what version 7 adds
        conn.execute("ALTER TABLE relayed DROP COLUMN claimant")
        conn.execute("DROP TABLE keystate_pins")  # and what version 8 adds
    store = IdentityStore(path)
    try:
        assert [r.nonce for r in InviteStore(store.db).invites()] == ["n-1"]
        assert store.db.one("SELECT version FROM muretai_schema WHERE store='door'") == (
            door_schema().latest,)
    finally:
        store.close()


def test_turn_check_lines_for_a_claim_show_the_name_as_their_words_stripped() -> None:
    from muretai_cli.cli._opconv import event_lines

    new = {"event": "joined", "from": "did:key:z6Mkjo", "name": "Jo\x1b[2J\x07", "newContact": True}
    assert event_lines(new) == ["joined through your invite: did:key:z6Mkjo, who gives the "
                                "name 'Jo?[2J?'"]
    known = {**new, "name": "Admin\x9b", "newContact": False}
    assert event_lines(known) == ["did:key:z6Mkjo claimed your invite again, giving the name "
                                  "'Admin?': already a contact, kept as it was"]
