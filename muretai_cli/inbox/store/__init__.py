"""The identity store: one identity's state (its door's and its turn-check's), on SQLite or
PostgreSQL.

By default one SQLite file per identity under ``$MURETAI_HOME/doors`` (created and upgraded
on open, as before). With ``--db postgresql://…`` the same tables live in the schema
``door_<key>`` of that database, created by ``muretai db init`` and shared by every process
serving the identity. All SQL is here, portable, and runs through ``Database.transaction``
(the PostgreSQL-only batch statements in ``bulk``, chosen once by ``Database.json_batches``):

- exclusive transactions (grants, holds, decisions, lists) run one at a time per identity
  across processes: SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory lock;
- the hot path (``accept``) rests on unique keys alone (``replay.message_id`` and
  ``inbox (sender, message_id)``), so several processes commit messages side by side and a
  ``messageId`` is accepted once, whichever process saw it first.

Tables: grants, redemptions (one per grant and sender: what counts a use), connections
(what lets a sender in, bounded by its grant's expiry), inbox, requests (held first
contacts), senders (allow/block lists and decisions' lasting effect), decisions (the
owner's log, with times), replay (messageIds accepted or held, door-wide), meta (the
card's revision, the identity's policy), sent (what this identity sent, and its state),
peers (where a peer said it can be reached: its relay, learned from a verified message),
relayed (each relay deposit drained: its outcome, and whether it was shown yet: ``NEW``,
``SHOWING`` while a turn-check prints it, ``SHOWN``).

Received messages carry their channel (``door`` or ``relay``), the ``replyTo`` their
signed fields proved, the relay the sender named (``metadata.relay``) and, for a message
the door accepted, the signed reply it was given (answered again to an exact repeat), and
the door's Web Bot Auth verdict on the HTTP request that carried it, when it was signed.

One module per table group, over one ``Database`` (``base``), joined in ``IdentityStore``:

    schema      every version's DDL (``door_schema``)
    base        the database, ``meta`` (card revision, settings), ``batch``
    uses        counted tokens (``spend_use``: grants and invites)
    grants      grants, redemptions, connections
    rates       shared rate counters
    receipts    replay, inbox and peers as written; holds; the ladder's reads
    decisions   held requests, sender lists, the owner's log
    timeline    the inbox as read, sent, peers, the conversation view
    drained     relayed deposits and whether turn-check showed them
    contacts    the contact book: names, reach and where each came from
    bulk        how a batch reaches the database (each in turn, or one JSON statement)
    windows     the rate and replay windows the tables and the batch SQL count by
    identity    ``IdentityStore``, where an identity's store lives, ``open_identity_store``
"""

from __future__ import annotations

from muretai_cli.inbox.store.contacts import SOURCES, BookRow, Source
from muretai_cli.inbox.store.decisions import SenderStatus, SenderView
from muretai_cli.inbox.store.drained import NEW, SHOWING, SHOWN, UNSHOWN
from muretai_cli.inbox.store.grants import GrantRow
from muretai_cli.inbox.store.identity import (
    IdentityStore,
    db_path,
    door_namespace,
    doors_dir,
    open_identity_store,
)
from muretai_cli.inbox.store.schema import door_schema
from muretai_cli.inbox.store.timeline import SentState
from muretai_cli.inbox.store.uses import GRANT_USES, Spent, Uses, spend_use
from muretai_cli.inbox.store.windows import RATE_WINDOW, REPLAY_WINDOW, Limits

__all__ = [
    "GRANT_USES",
    "NEW",
    "RATE_WINDOW",
    "REPLAY_WINDOW",
    "SHOWING",
    "SHOWN",
    "SOURCES",
    "UNSHOWN",
    "BookRow",
    "GrantRow",
    "IdentityStore",
    "Limits",
    "SenderStatus",
    "SenderView",
    "SentState",
    "Source",
    "Spent",
    "Uses",
    "db_path",
    "door_namespace",
    "door_schema",
    "doors_dir",
    "open_identity_store",
    "spend_use",
]
