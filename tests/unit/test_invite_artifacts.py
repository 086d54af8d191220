"""Invite cards, their paste form, and claims (library level)."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muretai_cli.artifacts.invite import (
    INVITE_PREFIX,
    accept_claim,
    build_claim,
    invite_text,
    iso_utc,
    mint_invite,
    parse_exp,
    read_invite,
    verify_claim,
    verify_invite,
)
from muretai_cli.errors import InputError, MuretaiError, Refused
from muretai_cli.seam import SigningKey, sign_envelope

NOW = 1_784_273_681
INVITER = SigningKey(bytes([11]) * 32)
JOINER = SigningKey(bytes([12]) * 32)
STRANGER = SigningKey(bytes([13]) * 32)


def card(**kw: Any) -> dict[str, Any]:
    return mint_invite(INVITER, name="Ines", exp=NOW + 3600, relay="http://127.0.0.1:9/",
                       enc_pub=INVITER.enc_pub, **kw)


def refused(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(MuretaiError) as info:
        fn(*args, **kwargs)
    return info.value.code


def test_exp_spelling_round_trips() -> None:
    assert iso_utc(1784282400) == "2026-07-17T10:00:00Z"
    assert parse_exp("2026-07-17T10:00:00Z") == 1784282400
    for bad in ("2026-07-17T10:00:00+00:00", "2026-07-17 10:00:00Z", "2026-13-01T00:00:00Z",
                1784282400, None):
        assert refused(parse_exp, bad) == "malformed-invite"


def test_invite_round_trip_and_paste_form() -> None:
    doc = card()
    assert len(doc["nonce"]) == 32 and int(doc["nonce"], 16) >= 0
    text = invite_text(doc)
    assert text.startswith(INVITE_PREFIX) and "=" not in text
    assert read_invite(text) == doc
    got = verify_invite(read_invite(text), now=NOW)
    assert (got.did, got.name, got.relay, got.enc_pub) == (INVITER.did, "Ines",
                                                           "http://127.0.0.1:9/",
                                                           INVITER.enc_pub)


def test_invite_refusals() -> None:
    doc = card()
    assert refused(verify_invite, doc, now=NOW + 3600) == "expired-invite"
    assert refused(verify_invite, {**doc, "relay": "https://attacker.example"},
                   now=NOW) == "bad-signature"
    assert refused(verify_invite, {**doc, "did": STRANGER.did}, now=NOW) == "bad-signature"
    broken = {**doc, "sig": STRANGER.sign(b"x")}
    assert refused(verify_invite, broken, now=NOW) == "bad-signature"
    assert refused(verify_invite, {**doc, "v": True}, now=NOW) == "malformed-invite"
    assert refused(mint_invite, INVITER, name="x", exp=NOW) == "unreachable-identity"


def test_paste_form_has_one_spelling() -> None:
    text = invite_text(card())
    assert refused(read_invite, text + "=") == "bad-invite-text"
    assert refused(read_invite, text[:-1] + "+") == "bad-invite-text"
    # a trailing-bit sibling decodes to the same bytes and is still refused
    last = text[-1]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    siblings = [c for c in alphabet if c != last]
    refusals = 0
    for c in siblings:
        try:
            read_invite(text[:-1] + c)
        except InputError:
            refusals += 1
    assert refusals == len(siblings)


def claim_for(doc: dict[str, Any], **kw: Any) -> dict[str, Any]:
    invite = verify_invite(doc, now=NOW)
    return build_claim(JOINER, invite=invite, name="Jo", now=NOW, enc_pub=JOINER.enc_pub,
                       relay="http://127.0.0.1:9/", **kw)


def test_claim_round_trip_binds_its_side_fields() -> None:
    doc = card()
    claim = claim_for(doc)
    assert claim["message"]["to"] == INVITER.did and claim["nonce"] == doc["nonce"]
    got = verify_claim(claim, inviter_did=INVITER.did, now=NOW)
    assert (got.from_did, got.name, got.enc_pub, got.notes) == (JOINER.did, "Jo",
                                                               JOINER.enc_pub, ())
    for field, value in (("enc_pub", STRANGER.enc_pub), ("relay", "https://attacker.example"),
                         ("name", "Admin"), ("nonce", "0" * 32)):
        assert refused(verify_claim, {**claim, field: value}, inviter_did=INVITER.did,
                       now=NOW) == "claim-fields-altered"


def test_a_claim_has_the_shape_of_the_reject_claim_vectors(wire_vectors: dict[str, Any]
                                                           ) -> None:
    # the vectors' claim carries enc_pub and relay; ours, with both given, has exactly its keys
    (shape,) = [c["input"] for c in wire_vectors["reject"]["claim"]
                if c["name"] == "claim-unsigned"]
    claim = claim_for(card())
    assert sorted(claim) == sorted(shape)
    assert sorted(claim["message"]) == sorted(shape["message"])
    assert claim["method"] == shape["method"] and claim["message"]["text"] == "onboard/claim"


def test_claim_refusals_signature_first() -> None:
    claim = claim_for(card())
    other = copy.deepcopy(claim)
    other["message"]["sig"] = STRANGER.sign(b"x")
    assert refused(verify_claim, other, inviter_did=INVITER.did, now=NOW) == "bad-signature"
    assert refused(verify_claim, claim, inviter_did=STRANGER.did,
                   now=NOW) == "wrong-recipient"
    assert refused(verify_claim, claim, inviter_did=INVITER.did, now=NOW + 301) == "stale"
    hello = {**claim, "message": sign_envelope(JOINER, to=INVITER.did, text="hello",
                                               timestamp=NOW)}
    assert refused(verify_claim, hello, inviter_did=INVITER.did, now=NOW) == "malformed-claim"


def test_a_claim_without_a_binding_is_read_and_flagged() -> None:
    message = sign_envelope(JOINER, to=INVITER.did, text="onboard/claim", timestamp=NOW,
                            context_id="cc")
    claim = {"method": "onboard/claim", "message": message, "nonce": "n1", "name": "Al"}
    got = verify_claim(claim, inviter_did=INVITER.did, now=NOW)
    assert [n.code for n in got.notes] == ["unbound-fields"]


def test_accept_claim_spends_only_after_the_signature() -> None:
    spent: list[Any] = []
    claim = claim_for(card())
    forged = copy.deepcopy(claim)
    forged["message"]["sig"] = STRANGER.sign(b"x")
    with pytest.raises(Refused):
        accept_claim(forged, inviter_did=INVITER.did, now=NOW, spend=spent.append)
    assert spent == []
    accept_claim(claim, inviter_did=INVITER.did, now=NOW, spend=spent.append)
    assert [c.nonce for c in spent] == [claim["nonce"]]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(["v", "did", "name", "url", "relay", "enc_pub", "nonce", "exp", "sig",
                        "method", "message"]), json_values)
def test_invite_and_claim_verifiers_are_total(field: str, value: object) -> None:
    doc = {**card(), field: value}
    claim = {**claim_for(card()), field: value}
    for fn, arg, kw in ((verify_invite, doc, {}),
                        (verify_claim, claim, {"inviter_did": INVITER.did})):
        with contextlib.suppress(MuretaiError):
            fn(arg, now=NOW, **kw)  # type: ignore[arg-type]
    with contextlib.suppress(MuretaiError):
        read_invite(INVITE_PREFIX + str(value))
