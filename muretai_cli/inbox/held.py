"""A held first contact's decision, read and waited for by its request id.

The gate tells an agent which request the owner must decide (``requestId``) and the shell
command that decides it; ``wait_decision`` is the agent's half of that promise: it returns
as soon as the store records the owner's approve or reject (whichever process wrote it), at
once when that is already done, else when the time is up (still held: not an error).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import InputError
from muretai_cli.inbox.reader import checked_wait

if TYPE_CHECKING:
    from muretai_cli.inbox.store import IdentityStore

__all__ = ["Decision", "decision_of", "wait_decision"]


@dataclass(frozen=True, slots=True)
class Decision:
    """Where a held request stands: ``held``, ``approved`` or ``rejected`` (with when)."""

    request_id: str
    sender: str
    status: str
    decided: int | None
    waited: bool = False  # a wait ended because its time was up

    @property
    def settled(self) -> bool:
        return self.status != "held"

    def to_json(self) -> dict[str, Any]:
        return {"requestId": self.request_id, "from": self.sender, "status": self.status,
                "decided": self.decided, "settled": self.settled}


def decision_of(store: IdentityStore, request_id: str) -> Decision:
    """The request's state as stored; ``InputError`` ``no-such-request`` when none has it."""
    row = store.db.one("SELECT sender, status, decided FROM requests WHERE id=?",
                       (request_id,))
    if row is None:
        raise InputError("no-such-request", f"no held request with id {request_id[:80]!r}",
                         hint="requests_list shows the held requests and their ids")
    decided = row[2]
    return Decision(request_id, str(row[0]), str(row[1]),
                    int(decided) if decided is not None else None)


def wait_decision(store: IdentityStore, request_id: str, *, timeout: float | None = None
                  ) -> Decision:
    """``decision_of``, waiting while the request is held: until the owner's decision is
    committed, or ``timeout`` seconds (None: the reader's default; at most its maximum)
    are up, when the still-held state is returned with ``waited`` True."""
    seconds = checked_wait(timeout)
    deadline = time.monotonic() + seconds
    with store.db.changes() as changes:  # opened before the read: no commit slips between
        while True:
            found = decision_of(store, request_id)
            left = deadline - time.monotonic()
            if found.settled or left <= 0:
                if found.settled:
                    return found
                return Decision(found.request_id, found.sender, found.status, found.decided,
                                waited=True)
            changes.wait(left)
