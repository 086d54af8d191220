"""The listener lease within one process (home/_listener.py): one holder, not re-entrant,
freed on release; another open file description sees it taken (as another process does)."""

from __future__ import annotations

import fcntl
import os

from muretai_cli.home import hold_listener, listener_holder, listener_state
from muretai_cli.home._listener import listener_path
from muretai_cli.seam import SigningKey


def test_one_holder_at_a_time_and_freed_on_release() -> None:
    did = SigningKey.generate().did
    assert listener_state(did) == "none"
    lease = hold_listener(did, holder="here:1:2")
    assert lease is not None and lease.held
    assert hold_listener(did) is None  # not re-entrant: one part of a process listens
    assert listener_state(did) == "held" and listener_holder(did) == "here:1:2"
    fd = os.open(listener_path(did), os.O_RDONLY)  # as another process would look
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken = False
        except OSError:
            taken = True
        assert taken, "the lease is no OS lock"
    finally:
        os.close(fd)
    lease.release()
    assert not lease.held and listener_state(did) == "none"
    again = hold_listener(did)
    assert again is not None
    again.release()
