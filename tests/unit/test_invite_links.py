"""Invite links as people paste them: muretai's own link forms (``https://HOST/invitation#d=…``
and ``agent://invite?d=…``, read as the public onboarding script reads them: the card's JSON
in base64url after ``d=``, padding optional) give the same card as the paste form; anything
else is refused naming the forms (exit 2); ``invite create`` prints the link form."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from muretai_cli.artifacts.invite import (
    INVITE_FORMS,
    invite_link,
    invite_text,
    mint_invite,
    read_invite,
    verify_invite,
)
from muretai_cli.errors import InputError
from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run, run_json

NOW = 1_784_273_681
INVITER = SigningKey(bytes([11]) * 32)


def _card() -> dict[str, Any]:
    return mint_invite(INVITER, name="Ines", exp=NOW + 3600, relay="http://127.0.0.1:9/",
                       enc_pub=INVITER.enc_pub)


def _token(card: dict[str, Any], *, padded: bool) -> str:
    """The token as another muretai client may write it: base64url of the card's JSON."""
    raw = base64.urlsafe_b64encode(json.dumps(card, separators=(",", ":")).encode()).decode()
    return raw if padded else raw.rstrip("=")


def _padded_card() -> dict[str, Any]:
    card = _card()
    while not _token(card, padded=True).endswith("="):  # make the padding matter
        card = {**card, "name": card["name"] + "s"}
    return card


@pytest.mark.parametrize("form", ["https://muretai.com/invitation#d={}",
                                  "https://relay.example:8443/invitation#d={}",
                                  "agent://invite?d={}"])
@pytest.mark.parametrize("padded", [False, True])
def test_both_link_forms_read_as_the_card(form: str, padded: bool) -> None:
    card = _padded_card()
    assert read_invite(form.format(_token(card, padded=padded))) == card
    assert read_invite("  " + form.format(_token(card, padded=padded)) + "\n") == card


def test_our_link_form_is_the_paste_forms_token() -> None:
    card = _card()
    link = invite_link(card)
    assert link == "agent://invite?d=" + invite_text(card).removeprefix("muretai:invite:")
    assert verify_invite(read_invite(link), now=NOW).did == INVITER.did


@pytest.mark.parametrize("text", [
    "http://muretai.com/invitation#d={}",      # not https
    "https://muretai.com/invite#d={}",         # another path
    "https://muretai.com/invitation?d={}",     # the https form carries it in the fragment
    "https://user@muretai.com/invitation#d={}",
    "agent://invite?x={}",
    "agent://invite?d={}&x=1",
    "https://muretai.com/i/abc123",            # a short link: needs a server, not read here
    "muretai:invite:{}=",                      # the paste form is unpadded
    "hello",
    "",
])
def test_anything_else_is_refused_naming_the_forms(text: str) -> None:
    with pytest.raises(InputError) as caught:
        read_invite(text.format(_token(_padded_card(), padded=False)))
    assert caught.value.code == "bad-invite-text"
    assert caught.value.hint and all(form in caught.value.hint for form in INVITE_FORMS)


def test_wrong_padding_in_a_link_is_refused() -> None:
    token = _token(_padded_card(), padded=False)
    for bad in (token + "===", token + "=" * (-len(token) % 4 + 1)):
        with pytest.raises(InputError):
            read_invite("agent://invite?d=" + bad)


def test_cli_takes_links_and_refuses_other_forms_with_exit_2() -> None:
    new_identity("ines")
    code, made = run_json("invite", "create", "--as", "ines", "--relay", "http://127.0.0.1:9")
    assert code == 0 and made["link"].startswith("agent://invite?d=")
    assert made["link"].removeprefix("agent://invite?d=") == \
        made["text"].removeprefix("muretai:invite:")
    https = "https://muretai.com/invitation#d=" + made["link"].removeprefix("agent://invite?d=")
    for link in (made["link"], https):
        code, doc = run_json("invite", "verify", link)
        assert code == 0 and doc["nonce"] == made["invite"]["nonce"]
    new_identity("jo")
    for verb in (("join",), ("invite", "accept")):
        bad = run(*verb, "https://muretai.com/i/abc123", "--as", "jo")
        assert bad.exit_code == 2, bad.stderr
        assert "bad-invite-text" in bad.stderr and "agent://invite?d=" in bad.stderr
