"""``turn-check``: drain this identity's relay mailbox, each message exactly once.

One epoch per process. Each listen answer (at most 100 items) goes through
``inbox.relayed.receive`` (open, parse, verify, consent) and is committed in ONE store
transaction, and only then acknowledged. What was committed is shown from the store
(``relayed`` rows), oldest first: rendered, claimed (``SHOWING``) in one transaction, written
to the output in one write, then marked ``SHOWN``. So a process killed at any point:

- before a batch commits: nothing of it is stored; the relay redelivers all of it;
- after the commit, before the ack: the relay redelivers it, and each redelivery is
  recognised by its deposit id (stored once, shown once);
- after the commit, before it was claimed: the next run shows it;
- between claiming and marking shown (in practice: during the write): it may or may not
  have reached the output. It is never printed again (nothing is printed twice); the next
  run names it under ``interrupted``, so it is not lost either (it is in the store:
  ``op inbox``). No program can close this window: the output and the store are two
  places, and one of them is written first.

A claim names its claimant (host, pid, the process's start time): a newer turn-check names
as interrupted only rows whose claimant is gone, never those a live turn-check (one it is
superseding, still printing) holds.

One process per identity listens (``home.hold_listener``: a lease the OS frees with its
holder). ``drain_unless_held`` drains under it, or answers None and asks the relay nothing
while another process holds it; ``TurnCheck.wait_stored`` is how a reader beside that holder
waits for what it stores. The relay's epochs still decide between machines.

``TurnCheck.at`` is called with the name of each of these points (``KILL_POINTS``); it does
nothing unless a test binds it (the CLI's ``MURETAI_TEST_KILL_AT`` seam, which kills the
process there, so each row of the table above is tested with a real kill -9).
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.inbox.vouches import VouchBook

if TYPE_CHECKING:
    from muretai_cli.inbox.consent import Policy
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.seam import SigningKey
    from muretai_cli.visit.relay import RelayClient, Waiting

# Where a kill -9 matters, in order: a listen answer processed but not committed; committed,
# not acknowledged; acknowledged, not shown; claimed, not written; written, not marked shown.
KILL_POINTS = ("processed", "committed", "acked", "claimed", "written")

# One drain's bounds: past any of them while the relay still says ``more``, the relay is
# misbehaving (``relay-misbehaving``: what was received is kept and shown, exit 1). An honest
# relay's fullest mailbox at its defaults (--max-waiting 1,000 x --max-blob 256 KiB: ten
# answers, ~350 MB of JSON) drains well inside each; a relay that always says ``more``
# (issue 22 §2: 451 listens in 40 s, a refused row stored each time) meets the first.
DRAIN_MAX_ROUNDS = 100  # listen answers (10,000 messages at 100 per answer)
DRAIN_MAX_BYTES = 512 * 1024 * 1024  # the listen answers' bodies together
DRAIN_MAX_SECONDS = 300.0  # from the first listen to the last ack


@dataclass
class Drained:
    """What one drain step did (before showing): counts by outcome."""

    counts: dict[str, int] = field(default_factory=dict)
    more: bool = False
    size: int = 0  # bytes of the listen answer

    def add(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1


class TurnCheck:
    def __init__(self, key: SigningKey, store: IdentityStore, relay: RelayClient, policy: Policy,
                 *, clock: Callable[[], float] = time.time, claimant: str | None = None,
                 at: Callable[[str], None] = lambda point: None,
                 ticker: Callable[[], float] = time.monotonic) -> None:
        from muretai_cli.visit.relay import new_epoch

        self.key = key
        self.store = store
        self.relay = relay
        self.policy = policy
        from muretai_cli.inbox.revocations import vouch_book

        # Proposals and revocations (inbox/vouches): a drain waits for an issuer's list.
        self.vouches: VouchBook = vouch_book(store, key.did, background=False)
        self.clock = clock
        self.epoch = new_epoch()
        self.claimant = claimant if claimant is not None else this_process()
        self.at = at  # the kill points' test seam (see the module's text)
        self.ticker = ticker  # what a drain's time bound counts

    def _one(self, item: Waiting, now: int, seen: set[tuple[str, str]]) -> str:
        from muretai_cli.db import Conflict, DatabaseUnavailable
        from muretai_cli.inbox.relayed import receive

        if item.problem is not None or item.sender is None or item.id is None \
                or item.from_enc is None or item.blob is None:
            deposit = item.id if item.id is not None else f"unnamed-{secrets.token_hex(8)}"
            self.store.record_refused(item.sender or "", deposit, item.problem or "malformed",
                                      "the relay listed an item without its fields", now)
            return "refused"
        if (item.sender, item.id) in seen:  # committed before, or listed twice in one answer
            return "duplicate"
        seen.add((item.sender, item.id))
        try:
            return receive(self.store, self.key, self.policy, deposit_id=item.id,
                           sender=item.sender, from_enc=item.from_enc, blob=item.blob,
                           now=now, seen=False, received=item.received,
                           book=self.vouches).outcome
        except (DatabaseUnavailable, Conflict):
            raise  # the whole answer rolls back, nothing is acked: the relay gives it again
        except MuretaiError as exc:  # pragma: no cover - receive is total on its input
            self.store.record_refused(item.sender, item.id, exc.code, exc.detail[:200], now)
            return "refused"

    def step(self, wait: int) -> Drained:
        """One listen (held up to ``wait`` s); its items committed or refused in one store
        transaction; then ack."""
        answer = self.relay.listen(self.key, epoch=self.epoch, wait=wait)
        done = Drained(more=answer.more, size=answer.size)
        if not answer.items:
            return done
        now = int(self.clock())
        ids: list[str] = []
        with self.store.batch():
            seen = self.store.deposits_seen(sorted(
                {(i.sender, i.id) for i in answer.items
                 if i.problem is None and i.sender is not None and i.id is not None}))
            for item in answer.items:
                done.add(self._one(item, now, seen))
                if item.id is not None:
                    ids.append(item.id)
            self.at("processed")
        self.at("committed")
        self.relay.ack(self.key, epoch=self.epoch, ids=ids)
        self.at("acked")
        return done

    def drain(self, wait: int) -> int:
        """Listen (the first time up to ``wait`` s), then keep draining while more wait, on
        one kept-alive connection to the relay, within the drain's bounds (``DRAIN_MAX_*``):
        a relay that says ``more`` with nothing in the answer, or still says it past one of
        them, is misbehaving (``Refused("relay-misbehaving")``; what was committed stays)."""
        total = rounds = size = 0
        started = self.ticker()
        with self.relay.kept_alive():
            done = self.step(wait)
            while True:
                rounds += 1
                size += done.size
                total += sum(done.counts.values())
                if not done.more:
                    return total
                spent = self.ticker() - started
                if not done.counts:
                    why = "an answer with no messages says more are waiting"
                elif rounds >= DRAIN_MAX_ROUNDS:
                    why = f"it still says more after {rounds} listen answers"
                elif size >= DRAIN_MAX_BYTES:
                    why = f"it still says more after {size} bytes of listen answers"
                elif spent >= DRAIN_MAX_SECONDS:
                    why = f"it still says more after {spent:.0f} s of draining"
                else:
                    done = self.step(0)
                    continue
                raise Refused("relay-misbehaving", "the relay never ends a drain: "
                                                   f"{why} ({total} deposits received, "
                                                   "kept and shown)",
                              hint="run turn-check again later; if it recurs, the relay is "
                                   "not one to trust with this identity's mail")

    def unshown(self) -> list[dict[str, Any]]:
        """What was committed and not shown yet, oldest first."""
        return self.store.unshown()

    def wait_stored(self, seconds: float) -> list[dict[str, Any]]:
        """``unshown()``, waiting up to ``seconds`` for the process that holds the listener
        to store something (woken by its commit: ``Database.changes``), never listening."""
        deadline = time.monotonic() + seconds
        with self.store.db.changes() as changes:  # opened before the read
            while True:
                items = self.unshown()
                left = deadline - time.monotonic()
                if items or left <= 0:
                    return items
                changes.wait(left)

    def claim(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Those of ``items`` this process may show now (no other turn-check will)."""
        claimed = set(self.store.claim([int(i["row"]) for i in items], self.claimant))
        self.at("claimed")
        return [i for i in items if int(i["row"]) in claimed]

    def shown(self, items: list[dict[str, Any]]) -> None:
        """Those claimed items reached the output."""
        self.at("written")
        self.store.mark_shown([int(i["row"]) for i in items])

    def interrupted(self) -> list[dict[str, Any]]:
        """Items an earlier turn-check claimed and may not have shown (it was killed)."""
        return self.store.take_interrupted(
            lambda who: who != self.claimant and claimant_alive(who))


def drain_unless_held(key: SigningKey, store: IdentityStore, relay: RelayClient,
                      policy: Policy, *, wait: int = 0) -> int | None:
    """Drain the identity's relay into its store (``TurnCheck.drain``), holding its listener
    lease (``home.hold_listener``) meanwhile: the number of deposits received; or None, and
    no request to the relay, when another process (or another part of this one) holds the
    listener. That holder stores what arrives: read the store (``inbox.reader``)."""
    from muretai_cli.home import hold_listener

    lease = hold_listener(key.did, holder=this_process())
    if lease is None:
        return None
    with lease:
        return TurnCheck(key, store, relay, policy).drain(wait)


def _started(pid: int) -> tuple[str, str] | None:
    """A process's state and start time (clock ticks since boot), from ``/proc``; None when
    there is no such process or no ``/proc``."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()  # the name (field 2) may hold ")" or spaces
    return (fields[0], fields[19]) if len(fields) > 19 else None


def this_process() -> str:
    """This process as a claimant: ``host:pid:start`` (the start time, where the system
    says it, so a pid reused by another process is not taken for this one)."""
    started = _started(os.getpid())
    return f"{socket.gethostname()}:{os.getpid()}:{started[1] if started else '-'}"


def claimant_alive(who: str | None) -> bool:
    """Whether the process named by ``this_process()``'s text ``who`` is running on this
    host. A claimant on another host (a shared PostgreSQL store) cannot be asked: not alive,
    so its rows are reported, as they always were, as possibly not printed."""
    parts = (who or "").split(":")
    if len(parts) < 3 or not parts[-2].isdigit():
        return False
    host, pid, start = ":".join(parts[:-2]), int(parts[-2]), parts[-1]
    if host != socket.gethostname():
        return False
    if start != "-":
        now = _started(pid)
        return now is not None and now[1] == start and now[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def interrupted_of(item: dict[str, Any]) -> dict[str, Any]:
    """An item an interrupted turn-check may not have shown, as a reader gets it."""
    message = item.get("message") or {}
    return {"from": item["from"] or None, "depositId": item["depositId"],
            "outcome": item["outcome"], "messageId": message.get("messageId"),
            "at": item["at"]}


def event_of(item: dict[str, Any]) -> dict[str, Any]:
    """A stored relayed row as the JSON a reader gets: a message, a held one, a refusal."""
    if item["outcome"] == "joined":  # an invite claim honoured; the name is their own words
        return {"event": "joined", "from": item["from"], "depositId": item["depositId"],
                "name": item["reason"]["message"],
                "newContact": item["reason"]["code"] != "known-contact", "at": item["at"]}
    if item["outcome"] == "vouch":  # a proposal held for review, or an answer to ours
        return {"event": "vouch", "from": item["from"], "depositId": item["depositId"],
                "reason": item["reason"], "at": item["at"]}
    if item["outcome"] == "refused":
        return {"event": "refused", "from": item["from"] or None, "depositId": item["depositId"],
                "reason": item["reason"], "at": item["at"]}
    message = dict(item.get("message") or {})
    out = {"event": "message" if item["outcome"] == "accepted" else "held", **message,
           "verified": True, "channel": "relay", "depositId": item["depositId"]}
    if item["outcome"] == "held":
        out["requestId"] = item.get("requestId")
    return out
