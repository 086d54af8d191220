"""A card published again within the same second (a revocation, then ``card publish``) is
signed once more just after the one the relay holds, never refused as stale."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from muretai_cli.errors import MuretaiError
from muretai_cli.net import SafeClient
from muretai_cli.seam import SigningKey, sign_card_envelope
from muretai_cli.seam._limits import REPUBLISH_AHEAD
from muretai_cli.visit.relay import RelayClient
from tests.relay_helpers import live_relay


def _client(seconds: float, max_bytes: int) -> SafeClient:
    return SafeClient(timeout=seconds, max_bytes=max_bytes)


def test_a_second_publish_in_the_same_second_is_signed_just_after_the_held_one(
        tmp_path: Path) -> None:
    key = SigningKey.generate()
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        client = RelayClient(relay.url, _client)
        card = {"did": key.did, "name": "me", "url": "", "relay": relay.url,
                "enc_pub": key.enc_pub}
        now = int(time.time())
        first = client.publish_signed(key, card, now)
        second = client.publish_signed(key, {**card, "name": "me again"}, now)
        assert (first["ts"], second["ts"]) == (now, now + 1)
        held = client.card(key.did, now=now)
        assert (held.ts, held.card["name"]) == (now + 1, "me again")


def test_an_envelope_far_ahead_is_not_chased(tmp_path: Path) -> None:
    """Held further ahead than ``REPUBLISH_AHEAD``: refused as stale, not signed past it."""
    key = SigningKey.generate()
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        client = RelayClient(relay.url, _client)
        card = {"did": key.did, "name": "me", "url": "", "relay": relay.url,
                "enc_pub": key.enc_pub}
        now = int(time.time())
        client.publish(sign_card_envelope(key, card, now + 200))
        with pytest.raises(MuretaiError) as refused:
            client.publish_signed(key, card, now + 200 - REPUBLISH_AHEAD)
        assert refused.value.code == "stale-card"
