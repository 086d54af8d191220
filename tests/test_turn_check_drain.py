"""turn-check's drain against a real relay: a listen answer is at most 100 deposits, so 250
waiting take three listens and three acks, all on one kept-alive client (one connection,
no new client per request) that is closed when the drain ends."""

from __future__ import annotations

from pathlib import Path

from muretai_cli.inbox.store import DoorStore
from muretai_cli.net import SafeClient
from muretai_cli.seam import SigningKey
from muretai_cli.visit.relay import RelayClient
from muretai_cli.visit.turn import TurnCheck
from tests.relay_helpers import fill_mailbox, live_relay


def test_a_drain_reuses_one_client_for_every_listen_and_ack(tmp_path: Path) -> None:
    bob = SigningKey.generate()
    made: list[SafeClient] = []

    def client_for(seconds: float, max_bytes: int) -> SafeClient:
        made.append(SafeClient(timeout=seconds, max_bytes=max_bytes))
        return made[-1]

    with live_relay(tmp_path / "relay.sqlite3", max_waiting=1000) as relay:
        texts = fill_mailbox(tmp_path / "relay.sqlite3", bob, 250)
        store = DoorStore(tmp_path / "bob.sqlite3")
        try:
            relay_client = RelayClient(relay.url, client_for)
            check = TurnCheck(bob, store, relay_client, "open")
            assert check.drain(0) == 250
            shown = [i["message"]["text"] for i in store.unshown()]
            assert sorted(shown) == sorted(texts.values())
            assert len(made) == 1  # three listens and three acks, one client
            assert [a["status"] for a in made[0].attempts] == [200]  # each request rearmed it
            assert relay_client._kept is None  # closed with the drain
            assert relay.relay.store.waiting(bob.did, limit=10, since=0) == ([], False)
            assert check.drain(0) == 0 and len(made) == 2  # the next drain: its own client
        finally:
            store.close()
