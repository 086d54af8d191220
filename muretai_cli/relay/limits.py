"""The relay's limits and settings, and its epoch rule: every bound ``relay serve`` has, in
one place (``docs/relay.md``'s tables name them)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from muretai_cli.relay.store import MAX_MAILBOX_BYTES
from muretai_cli.transport import IDLE_SECONDS, MAX_CONNECTIONS, MAX_PER_CLIENT

if TYPE_CHECKING:
    from muretai_cli.urls import BaseUrl

MAX_ID_CHARS = 128
ID_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f|]")  # in a deposit id
MIN_BOX_BYTES = 12 + 16  # a nonce and a tag: anything shorter is not a sealed box
MAX_EPOCH = 2**63 - 1
# A listener's epoch is unsigned (the seam's token signs did, minute and origin only), so the
# relay bounds it by what IS signed: an epoch counts microseconds (``time_ns() // 1000`` at
# the listener's start), and one below the end of the token's minute is all a listener
# started by then can hold. A copied token can so take a DID over only until that minute
# ends; a stored epoch past what any token valid now allows is void (see ``epoch_end``).
EPOCH_PER_MINUTE = 60_000_000
MAX_ACK_IDS = 1000
HELD_PER_DID = 4  # listens one DID may hold open at once; a newer one ends the oldest
HELD_REFRESH = 10.0  # seconds between the store's counts of the bytes waiting (relay-wide)
CORRESPONDENTS = 100_000  # (sender, recipient) pairs remembered for the friends' lane


def epoch_end(minute: int) -> int:
    """The first epoch after ``minute``: a listen token for ``minute`` carries a lower one."""
    return (minute + 1) * EPOCH_PER_MINUTE


@dataclass(frozen=True)
class RelayLimits:
    """Every limit of ``muretai relay serve``, with its flag's default."""

    max_body: int = 512 * 1024
    max_blob: int = 256 * 1024  # characters of the base64 blob
    per_sender: int = 60  # deposits per minute by one sender (0: no limit)
    per_mailbox: int = 600  # deposits per minute into one mailbox (0: no limit)
    max_waiting: int = 1000  # undelivered messages per DID
    max_mailbox_bytes: int = MAX_MAILBOX_BYTES  # blob characters waiting for one DID
    max_relay_bytes: int = 4 * 1024**3  # blob characters waiting, whole relay
    max_stranger_bytes: int = 256 * 1024**2  # ... for DIDs that never listened
    expire_seconds: int = 7 * 86400
    batch: int = 100  # messages per listen answer
    default_wait: float = 25.0
    max_wait: float = 30.0
    minute_skew: int = 1  # listen tokens: minutes either side of the relay's clock
    card_per_did: int = 10  # card posts per minute by one DID (0: no limit)
    new_cards: int = 60  # card posts per minute, whole relay, by DIDs it holds no card for
    stranger_cards: int = 100_000  # cards held for DIDs that never listened (past it: 507)


@dataclass
class RelayConfig:
    url: BaseUrl
    limits: RelayLimits = field(default_factory=RelayLimits)
    slow_seconds: float = 10.0  # one deadline for a request's head and body
    # the shared transport's admission (transport.server.Admission); held listens count
    max_connections: int = MAX_CONNECTIONS
    max_per_client: int = MAX_PER_CLIENT
    idle_seconds: float = IDLE_SECONDS
    durable: bool = False
