"""Introductions proposed to this identity, its answers to them, and what it revoked.

Tables of the identity store (``IdentityStore``, whose schema creates them: version 12),
on its SQLite file or PostgreSQL schema alike. All their SQL is here.

    intro_proposals       the target's review rows: one per (introducer, proposal id); a
                          credential id belongs to one row (``credential-id-taken``
                          otherwise); status pending | approved | declined; ``told``: when
                          the introducer was sent the decision
    intro_proposals_sent  the introducer's side: what it proposed to whom, and the decision
                          the target answered (``introduce/respond``)
    intro_revoked         ids of introductions this identity issued and revoked

``receive_proposal`` and ``receive_response`` are the one way in, for the door and the
relay drain alike: the artifact is verified first (``artifacts.vouch``), nothing is read
before, and a refusal changes nothing.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from muretai_cli.artifacts.introduction import signed_digest
from muretai_cli.artifacts.vouch import (
    Decision,
    Proposal,
    Reach,
    Response,
    verify_proposal,
    verify_response,
)
from muretai_cli.errors import InputError, Refused
from muretai_cli.inbox.ladder import Code
from muretai_cli.seam._limits import PROPOSALS_PER_INTRODUCER, PROPOSALS_TOTAL

if TYPE_CHECKING:
    from muretai_cli.db import Database, Tx
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.seam import SigningKey

# Version 14 (``inbox.store.door_schema``): what a proposal's credential was when it
# verified on arrival (``artifacts.introduction.signed_digest``), by credential id, so the
# gate need not solve the same signatures again when its subject's first contact carries
# the very same credential.
VERIFIED_TABLES = """
CREATE TABLE IF NOT EXISTS intro_verified (credential_id TEXT PRIMARY KEY, digest TEXT NOT NULL)
"""

# The door schema's version 12 (``inbox.store.door_schema``).
VOUCH_TABLES = """
CREATE TABLE IF NOT EXISTS intro_proposals (
  id TEXT PRIMARY KEY, introducer TEXT NOT NULL, wire_id TEXT NOT NULL,
  credential_id TEXT NOT NULL UNIQUE, subject TEXT NOT NULL, doc TEXT NOT NULL, note TEXT,
  reach TEXT NOT NULL, channel TEXT NOT NULL, received {int} NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending', decided {int}, told {int},
  UNIQUE (introducer, wire_id));
CREATE INDEX IF NOT EXISTS intro_proposals_pending ON intro_proposals (status, introducer);
CREATE TABLE IF NOT EXISTS intro_proposals_sent (
  id TEXT PRIMARY KEY, credential_id TEXT NOT NULL, target TEXT NOT NULL,
  sent {int} NOT NULL, decision TEXT, decided {int});
CREATE INDEX IF NOT EXISTS intro_proposals_sent_credential ON intro_proposals_sent
  (credential_id);
CREATE TABLE IF NOT EXISTS intro_revoked (credential_id TEXT PRIMARY KEY, at {int} NOT NULL)
"""

ProposalState = Literal["pending", "approved", "declined"]
_COLUMNS = ("id, introducer, wire_id, credential_id, subject, doc, note, reach, channel, "
            "received, status, decided, told")
_INSERT = (f"INSERT INTO intro_proposals ({_COLUMNS}) "  # noqa: S608 - constants only
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_SELECT = f"SELECT {_COLUMNS} FROM intro_proposals"  # noqa: S608 - constants only


@dataclass(frozen=True, slots=True)
class ProposalRow:
    """One review row: a proposal that verified when it arrived, and its decision."""

    id: str
    introducer: str
    wire_id: str
    credential_id: str
    subject: str
    credential: dict[str, Any]
    note: str | None
    reach: Reach
    channel: str
    received: int
    status: ProposalState
    decided: int | None
    told: int | None

    def to_json(self) -> dict[str, Any]:
        claims = self.credential.get("credentialSubject")
        claims = claims if isinstance(claims, dict) else {}
        provenance = self.credential.get("provenance")
        return {"proposalId": self.id, "wireId": self.wire_id, "introducer": self.introducer,
                "subject": self.subject, "credentialId": self.credential_id,
                "expertise": claims.get("expertise", []),
                "trustLevelBp": claims.get("trustLevelBp"),
                "validUntil": claims.get("validUntil"),
                "provenance": provenance.get("mode") if isinstance(provenance, dict)
                else "unrecorded",
                "note": self.note, "channel": self.channel, "received": self.received,
                "status": self.status, "decided": self.decided, "told": self.told}


def _row(r: tuple[Any, ...]) -> ProposalRow:
    reach = json.loads(r[7])
    return ProposalRow(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6],
                       Reach(reach.get("url"), reach.get("relay"), reach.get("enc_pub")),
                       r[8], r[9], r[10], r[11], r[12])


class ProposalBook:
    """The three tables of one identity, on its store's database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- the target's review rows ------------------------------------------------------
    def hold(self, proposal: Proposal, *, channel: str, now: int) -> tuple[ProposalRow, bool]:
        """Keep a verified proposal for review; returns its row and whether it is new. The
        same proposal again (same introducer and id, or the same credential from the same
        introducer) is its row as it is. ``Refused``: ``credential-id-taken`` (another
        introducer's row holds that credential id), ``proposals-full`` (the introducer's
        pending rows at ``PROPOSALS_PER_INTRODUCER``, or everyone's at ``PROPOSALS_TOTAL``).
        One exclusive transaction, so a flood racing itself is still bounded."""
        with self.db.transaction() as tx:
            kept = tx.one(_SELECT + " WHERE (introducer=? AND wire_id=?) OR credential_id=?",
                          (proposal.issuer, proposal.id, proposal.credential_id))
            if kept is not None:
                row = _row(tuple(kept))
                if row.introducer != proposal.issuer:
                    raise Refused("credential-id-taken", "another introducer's proposal "
                                                         "holds this credential id")
                return row, False
            mine, everyone = self._pending(tx, proposal.issuer)
            if mine >= PROPOSALS_PER_INTRODUCER:
                raise Refused("proposals-full", f"{PROPOSALS_PER_INTRODUCER} proposals of "
                                                "this introducer await review already")
            if everyone >= PROPOSALS_TOTAL:
                raise Refused("proposals-full", f"{PROPOSALS_TOTAL} proposals await review "
                                                "already")
            row = ProposalRow(f"p-{secrets.token_hex(8)}", proposal.issuer, proposal.id,
                              proposal.credential_id, proposal.subject,
                              dict(proposal.doc["credential"]), proposal.note, proposal.reach,
                              channel, now, "pending", None, None)
            tx.execute(_INSERT,
                       (row.id, row.introducer, row.wire_id, row.credential_id, row.subject,
                        json.dumps(row.credential, sort_keys=True), row.note,
                        json.dumps(row.reach.to_json(), sort_keys=True), channel, now,
                        "pending", None, None))
            tx.execute("INSERT INTO intro_verified (credential_id, digest) VALUES (?, ?) "
                       "ON CONFLICT (credential_id) DO UPDATE SET digest=excluded.digest",
                       (row.credential_id, signed_digest(proposal.doc["credential"])))
            return row, True

    @staticmethod
    def _pending(tx: Tx, introducer: str) -> tuple[int, int]:
        row = tx.one("SELECT COALESCE(SUM(CASE WHEN introducer=? THEN 1 ELSE 0 END), 0), "
                     "count(*) FROM intro_proposals WHERE status='pending'", (introducer,))
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def rows(self, *, all_: bool = False) -> list[ProposalRow]:
        """Pending review rows (every one with ``all_``), oldest first."""
        return [_row(tuple(r)) for r in self.db.all(
            _SELECT + " WHERE status='pending' OR ?=1 ORDER BY received, id", (int(all_),))]

    def get(self, review_id: str) -> ProposalRow | None:
        r = self.db.one(_SELECT + " WHERE id=?", (review_id,))
        return _row(tuple(r)) if r else None

    def review(self, credential_id: str) -> tuple[ProposalState | None, str | None]:
        """The proposal's state, and the ``signed_digest`` its credential had when it
        verified on arrival (``hold``); (None, None) when none was proposed here."""
        r = self.db.one("SELECT p.status, v.digest FROM intro_proposals p LEFT JOIN "
                        "intro_verified v ON v.credential_id = p.credential_id "
                        "WHERE p.credential_id=?", (credential_id,))
        if r is None or r[0] not in ("pending", "approved", "declined"):
            return None, None
        return r[0], None if r[1] is None else str(r[1])

    def decide(self, review_id: str, decision: Decision, now: int) -> ProposalRow:
        """Record the owner's decision on a pending row (``InputError`` when there is no
        such row, or it was decided already)."""
        with self.db.transaction() as tx:
            r = tx.one("SELECT status FROM intro_proposals WHERE id=?", (review_id,))
            if r is None:
                raise InputError("no-such-proposal", f"no proposal with id {review_id[:64]!r}",
                                 hint="list them with `muretai op --as NAME requests`")
            if r[0] != "pending":
                raise InputError("already-decided", f"proposal {review_id} was already {r[0]}")
            tx.execute("UPDATE intro_proposals SET status=?, decided=? WHERE id=?",
                       (decision, now, review_id))
        row = self.get(review_id)
        if row is None:  # pragma: no cover - rows are never deleted
            raise InputError("no-such-proposal", f"no proposal with id {review_id[:64]!r}")
        return row

    def mark_told(self, review_id: str, now: int) -> None:
        self.db.execute("UPDATE intro_proposals SET told=? WHERE id=?", (now, review_id))

    # -- the introducer's side ---------------------------------------------------------
    def record_sent(self, proposal_id: str, credential_id: str, target: str, now: int) -> None:
        self.db.execute("INSERT INTO intro_proposals_sent (id, credential_id, target, sent) "
                        "VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                        (proposal_id, credential_id, target, now))

    def record_response(self, response: Response, now: int) -> bool:
        """Record a verified response; it must answer a proposal this identity sent to its
        signer, for that credential (``unknown-proposal`` otherwise). Returns whether it
        changed the decision recorded (a repeat changes nothing; a later one wins)."""
        with self.db.transaction() as tx:
            r = tx.one("SELECT credential_id, target, decision FROM intro_proposals_sent "
                       "WHERE id=?", (response.proposal_id,))
            if r is None or r[0] != response.credential_id or r[1] != response.target:
                raise Refused("unknown-proposal", "no proposal of this identity to the "
                                                  "responder matches this proposalId and "
                                                  "credentialId")
            if r[2] == response.decision:
                return False
            tx.execute("UPDATE intro_proposals_sent SET decision=?, decided=? WHERE id=?",
                       (response.decision, now, response.proposal_id))
            return True

    def decisions(self) -> dict[str, Decision]:
        """Credential id → the target's decision, for every answered proposal (the newest
        answer when a credential was proposed more than once)."""
        out: dict[str, Decision] = {}
        for cid, decision in self.db.all(
                "SELECT credential_id, decision FROM intro_proposals_sent WHERE decision IS NOT "
                "NULL ORDER BY decided, id"):
            out[cid] = "approved" if decision == "approved" else "declined"
        return out

    # -- the issuer's revocations ------------------------------------------------------
    def revoke(self, credential_id: str, now: int) -> bool:
        """Revoke an introduction this identity issued; returns whether it is new."""
        return bool(self.db.all("INSERT INTO intro_revoked (credential_id, at) VALUES (?, ?) "
                                "ON CONFLICT (credential_id) DO NOTHING RETURNING credential_id",
                                (credential_id, now)))

    def revoked_ids(self) -> list[str]:
        return sorted(str(r[0]) for r in self.db.all("SELECT credential_id FROM intro_revoked"))


def signed_revocations(key: SigningKey, ids: Sequence[str], now: int) -> dict[str, Any]:
    """The identity's revocation list as it publishes it (door GET, relay card)."""
    from muretai_cli.artifacts.vouch import mint_revocations

    return mint_revocations(key, list(ids), now=now)


def card_revocations(store: IdentityStore, key: SigningKey, now: int) -> dict[str, Any] | None:
    """The signed list a relay card carries (``visit.relay.relay_card``), or None when
    this identity revoked no introduction."""
    ids = ProposalBook(store.db).revoked_ids()
    return signed_revocations(key, ids, now) if ids else None


# -- the way in (door and relay drain) ------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Held:
    """A proposal kept for review (or found kept): the answer ``introduce/propose`` gets."""

    row: ProposalRow
    new: bool

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "state": "held", "proposalId": self.row.wire_id,
                "status": self.row.status, "new": self.new}


def receive_proposal(params: object, *, me: str, store: IdentityStore, now: int,
                     channel: str = "door",
                     rate: Callable[[str], None] | None = None) -> Held:
    """Verify ``introduce/propose`` params for ``me`` and hold them for review, or raise
    ``Refused`` (or what ``rate`` raises) having changed nothing. After the signature:
    ``rate`` (the door's per-sender limit) charged to the proposer; a blocked introducer is
    refused (``blocked``); then ``ProposalBook.hold``."""
    proposal = verify_proposal(params, me=me, now=now)
    if rate is not None:
        rate(proposal.issuer)
    if store.sender_status(proposal.issuer) == "blocked":
        raise Refused("blocked", "this identity blocked the introducer")
    row, new = ProposalBook(store.db).hold(proposal, channel=channel, now=now)
    return Held(row, new)


def receive_response(params: object, *, me: str, store: IdentityStore, now: int,
                     rate: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Verify ``introduce/respond`` params for ``me`` (the introducer) and record the
    decision, or raise ``Refused`` having changed nothing."""
    response = verify_response(params, me=me, now=now)
    if rate is not None:
        rate(response.target)
    changed = ProposalBook(store.db).record_response(response, now)
    return {"ok": True, "recorded": True, "changed": changed,
            "proposalId": response.proposal_id, "decision": response.decision}


_RPC_CODES = {"malformed": Code.INVALID_PARAMS, "wrong-typ": Code.INVALID_PARAMS,
              "float-in-payload": Code.INVALID_PARAMS, "note-too-long": Code.INVALID_PARAMS,
              "proposal-not-for-me": Code.NOT_FOR_ME, "response-not-for-me": Code.NOT_FOR_ME,
              "stale": Code.REPLAY_OR_STALE, "issued-in-future": Code.REPLAY_OR_STALE,
              "blocked": Code.INTRODUCTION_REQUIRED, "proposals-full": Code.RATE_LIMITED,
              "issuer-not-proposer": Code.GRANT_REFUSED,
              "credential-id-taken": Code.GRANT_REFUSED,
              "unknown-proposal": Code.INVALID_PARAMS}


def rpc_code(reason: str) -> Code:
    """The door's JSON-RPC code for a refused proposal or response: a credential's own
    refusal is GRANT_REFUSED (invalid or revoked); the signature's by default."""
    if reason.startswith("credential-"):
        return Code.GRANT_REFUSED
    return _RPC_CODES.get(reason, Code.SIGNATURE)


# -- what the gate and `introduce list` call -----------------------------------------------

def on_proposal_approved(store: IdentityStore, credential_id: str) -> None:
    """Called once the owner approved the proposal of ``credential_id``: the held first
    contacts vouched by this credential are admitted (``IdentityStore.admit_vouched``)."""
    import time

    store.admit_vouched(credential_id, int(time.time()))


def responses_for(store: IdentityStore) -> dict[str, Decision]:
    """Credential id → the decision its target answered (``op introduce list``'s column)."""
    return ProposalBook(store.db).decisions()


class RevokedCheck(Protocol):
    """What answers ``revoked(issuer, credential_id, endpoint)`` (``inbox.revocations``)."""

    def revoked(self, issuer: str, credential_id: str, endpoint: str | None) -> bool: ...


class VouchBook:
    """The gate's view of proposals and revocations, for one identity's store: the
    Protocol the gate consults (``proposal``, ``revoked``), structurally."""

    def __init__(self, store: IdentityStore, me: str,
                 checker: RevokedCheck | None = None) -> None:
        self.store = store
        self.me = me
        self.checker = checker

    def proposal(self, credential_id: str) -> Literal["pending", "approved", "declined"] | None:
        """The review state of the proposal of ``credential_id`` here, or None if none."""
        return self.review(credential_id)[0]

    def review(self, credential_id: str) -> tuple[ProposalState | None, str | None]:
        """The review state and the verified credential's ``signed_digest``, one read."""
        return ProposalBook(self.store.db).review(credential_id)

    def revoked(self, issuer: str, credential_id: str, endpoint: str | None) -> bool:
        """Whether ``issuer`` revoked ``credential_id``: this identity's own table when it
        is the issuer, else the issuer's published list (``RevocationChecker``)."""
        if issuer == self.me:
            return credential_id in ProposalBook(self.store.db).revoked_ids()
        if self.checker is None:
            return False
        return self.checker.revoked(issuer, credential_id, endpoint)
