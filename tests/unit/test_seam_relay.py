"""Relay bytes (seam §10): the deposit signature and the listen token, accepted and refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import muretai_cli.seam as seam
from muretai_cli.errors import Refused
from muretai_cli.seam import (
    SigningKey,
    listen_token_payload,
    relay_send_payload,
    sign_listen_token,
    sign_relay_send,
    verify_listen_token,
    verify_relay_send,
)
from muretai_cli.urls import parse_base_url

ALICE = SigningKey(bytes([0x11]) * 32)
BOB = SigningKey(bytes([0x22]) * 32)
ORIGIN = "https://relay.example"
BLOB = "c2VhbGVk"


def _deposit() -> dict[str, Any]:
    sig = sign_relay_send(ALICE, to=BOB.did, deposit_id="d1", blob=BLOB)
    return {"to": BOB.did, "sender": ALICE.did, "deposit_id": "d1", "blob": BLOB, "sig": sig}


def test_a_deposit_signature_verifies() -> None:
    verify_relay_send(**_deposit())


@pytest.mark.parametrize(("field", "value"), [
    ("to", ALICE.did), ("sender", BOB.did), ("deposit_id", "d2"), ("blob", "c2VhbGVl"),
])
def test_a_deposit_with_any_field_changed_is_refused(field: str, value: str) -> None:
    deposit = _deposit() | {field: value}
    with pytest.raises(Refused) as info:
        verify_relay_send(**deposit)
    assert info.value.code == "bad-signature"


def test_the_join_cannot_be_shifted_by_a_separator() -> None:
    # "a|b" as `to` would read as to=a, from=b...; only the id may carry '|'
    with pytest.raises(Refused):
        relay_send_payload(BOB.did + "|x", ALICE.did, "d", BLOB)
    with pytest.raises(Refused):
        relay_send_payload(BOB.did, ALICE.did, "d", BLOB + "|")
    assert relay_send_payload(BOB.did, ALICE.did, "a|b", BLOB).count(b"|") == 4


def test_a_listen_token_verifies_for_its_did_minute_and_origin() -> None:
    token = sign_listen_token(ALICE, minute=100, origin=ORIGIN)
    verify_listen_token(did=ALICE.did, minute=100, token=token, origin=ORIGIN)
    for change in ({"did": BOB.did}, {"minute": 101}, {"origin": "https://other.example"}):
        args: dict[str, Any] = {"did": ALICE.did, "minute": 100, "token": token,
                                "origin": ORIGIN} | change
        with pytest.raises(Refused):
            verify_listen_token(**args)


@pytest.mark.parametrize("origin", ["https://Relay.example", "https://relay.example/",
                                    "https://relay.example:443", "http://relay.example:80",
                                    "https://relay.example/path", "relay.example", None])
def test_a_listen_token_wants_a_canonical_origin(origin: object) -> None:
    with pytest.raises(Refused) as info:
        listen_token_payload(ALICE.did, 1, origin)  # type: ignore[arg-type]
    assert info.value.code == "bad-origin"


def test_two_spellings_of_one_relay_give_one_token() -> None:
    a = parse_base_url("HTTPS://Relay.Example:443/").origin
    b = parse_base_url("https://relay.example").origin
    assert sign_listen_token(ALICE, minute=5, origin=a) == sign_listen_token(ALICE, minute=5,
                                                                             origin=b)


@pytest.mark.parametrize("minute", [-1, True, 1.0, "1"])
def test_minute_is_a_non_negative_integer(minute: object) -> None:
    with pytest.raises(Refused):
        listen_token_payload(ALICE.did, minute, ORIGIN)  # type: ignore[arg-type]


def test_the_public_surface() -> None:
    """Every exported name resolves, and the relay and box names are part of it."""
    for name in seam.__all__:
        assert getattr(seam, name) is not None, name
    assert {"seal_box", "open_box", "enc_pub_from_seed", "relay_send_payload",
            "sign_relay_send", "verify_relay_send", "listen_token_payload",
            "sign_listen_token", "verify_listen_token"} <= set(seam.__all__)
    # dir(seam) is __all__ by construction (seam.__dir__): what really resolves is compared
    assert _resolvable_names() == set(seam.__all__)
    with pytest.raises(AttributeError):
        _ = seam.open_box_with_default_ad


def _resolvable_names() -> set[str]:
    """Every public name that ``seam.X`` gives: each public name of its modules that the
    package resolves, less what the package's own file imports for itself (its ``importlib``
    and typing names). A name one of them resolves but ``__all__`` leaves out, or the other
    way round, is a surface that differs from what it says."""
    import ast
    import importlib
    import pkgutil

    package = Path(seam.__file__)
    own = {alias.asname or alias.name.split(".")[0]
           for node in ast.parse(package.read_text()).body
           if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names}
    names = set()
    for info in pkgutil.iter_modules([str(package.parent)]):
        module = importlib.import_module(f"muretai_cli.seam.{info.name}")
        names |= {name for name in vars(module) if not name.startswith("_")}
    return {name for name in names - own if hasattr(seam, name)}
