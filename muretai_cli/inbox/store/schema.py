"""The identity store's tables: every schema version's DDL, in order (``door_schema``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from muretai_cli.db import Schema


# Version 1 is the schema SQLite door files have always had (its trigger included);
# PostgreSQL starts from the portable equivalent. Version 2 drops the trigger (the store
# writes the replay row itself) and gives grants an explicit order column.
_V1_SQLITE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS grants (
  id TEXT PRIMARY KEY, doc TEXT NOT NULL, uses INTEGER NOT NULL, used INTEGER NOT NULL DEFAULT 0,
  iat INTEGER NOT NULL, exp INTEGER NOT NULL, purpose TEXT, created INTEGER NOT NULL,
  revoked INTEGER);
CREATE TABLE IF NOT EXISTS redemptions (
  grant_id TEXT NOT NULL, sender TEXT NOT NULL, at INTEGER NOT NULL,
  PRIMARY KEY (grant_id, sender));
CREATE TABLE IF NOT EXISTS connections (
  sender TEXT NOT NULL, grant_id TEXT NOT NULL, opened INTEGER NOT NULL, expires INTEGER NOT NULL,
  PRIMARY KEY (sender, grant_id));
CREATE TABLE IF NOT EXISTS inbox (
  id INTEGER PRIMARY KEY, sender TEXT NOT NULL, message_id TEXT NOT NULL, context_id TEXT,
  text TEXT NOT NULL, sent INTEGER NOT NULL, received INTEGER NOT NULL,
  verified INTEGER NOT NULL, sig TEXT, via TEXT NOT NULL DEFAULT 'direct',
  UNIQUE (sender, message_id));
CREATE TABLE IF NOT EXISTS requests (
  id TEXT PRIMARY KEY, sender TEXT NOT NULL, message_id TEXT NOT NULL, context_id TEXT,
  text TEXT NOT NULL, sent INTEGER NOT NULL, received INTEGER NOT NULL, sig TEXT,
  status TEXT NOT NULL DEFAULT 'held', decided INTEGER);
CREATE INDEX IF NOT EXISTS requests_sender ON requests (sender, status);
CREATE TABLE IF NOT EXISTS senders (
  did TEXT PRIMARY KEY, status TEXT NOT NULL, since INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS decisions (
  id INTEGER PRIMARY KEY, at INTEGER NOT NULL, action TEXT NOT NULL, sender TEXT NOT NULL,
  request_id TEXT);
CREATE TABLE IF NOT EXISTS replay (message_id TEXT PRIMARY KEY, seen INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS inbox_remembers AFTER INSERT ON inbox WHEN NEW.via = 'direct'
BEGIN INSERT INTO replay (message_id, seen) VALUES (NEW.message_id, NEW.received); END
"""
_V2_SQLITE = """
DROP TRIGGER IF EXISTS inbox_remembers;
ALTER TABLE grants ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE grants SET seq = rowid
"""
_V1_PORTABLE = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE grants (
  id TEXT PRIMARY KEY, doc TEXT NOT NULL, uses {int} NOT NULL, used {int} NOT NULL DEFAULT 0,
  iat {int} NOT NULL, exp {int} NOT NULL, purpose TEXT, created {int} NOT NULL,
  revoked {int}, seq {int} NOT NULL DEFAULT 0);
CREATE TABLE redemptions (
  grant_id TEXT NOT NULL, sender TEXT NOT NULL, at {int} NOT NULL,
  PRIMARY KEY (grant_id, sender));
CREATE TABLE connections (
  sender TEXT NOT NULL, grant_id TEXT NOT NULL, opened {int} NOT NULL, expires {int} NOT NULL,
  PRIMARY KEY (sender, grant_id));
CREATE TABLE inbox (
  id {serial}, sender TEXT NOT NULL, message_id TEXT NOT NULL, context_id TEXT,
  text TEXT NOT NULL, sent {int} NOT NULL, received {int} NOT NULL,
  verified {int} NOT NULL, sig TEXT, via TEXT NOT NULL DEFAULT 'direct',
  UNIQUE (sender, message_id));
CREATE TABLE requests (
  id TEXT PRIMARY KEY, sender TEXT NOT NULL, message_id TEXT NOT NULL, context_id TEXT,
  text TEXT NOT NULL, sent {int} NOT NULL, received {int} NOT NULL, sig TEXT,
  status TEXT NOT NULL DEFAULT 'held', decided {int});
CREATE INDEX requests_sender ON requests (sender, status);
CREATE TABLE senders (did TEXT PRIMARY KEY, status TEXT NOT NULL, since {int} NOT NULL);
CREATE TABLE decisions (
  id {serial}, at {int} NOT NULL, action TEXT NOT NULL, sender TEXT NOT NULL,
  request_id TEXT);
CREATE TABLE replay (message_id TEXT PRIMARY KEY, seen {int} NOT NULL)
"""


# Version 3: shared rate-limit counters (a fixed one-minute window per key). Unlogged on
# PostgreSQL: counters need no crash safety, and their writes then cost no WAL; a transaction
# that wrote nothing else commits without waiting for a disk flush (PostgreSQL's own rule
# for transactions that wrote no WAL; checked with pg_stat_wal.wal_sync).
_V3 = """
CREATE {unlogged} TABLE rate (bucket TEXT NOT NULL, win {int} NOT NULL, used {int} NOT NULL,
  PRIMARY KEY (bucket, win))
"""
# Version 4: conversations. What was sent, peers' relays, relayed deposits; the channel,
# proved replyTo, named relay and kept reply of received messages; an order for requests.
_V4 = """
ALTER TABLE inbox ADD COLUMN channel TEXT NOT NULL DEFAULT 'door';
ALTER TABLE inbox ADD COLUMN reply_to TEXT;
ALTER TABLE inbox ADD COLUMN relay TEXT;
ALTER TABLE inbox ADD COLUMN reply TEXT;
ALTER TABLE requests ADD COLUMN channel TEXT NOT NULL DEFAULT 'door';
ALTER TABLE requests ADD COLUMN reply_to TEXT;
ALTER TABLE requests ADD COLUMN relay TEXT;
ALTER TABLE requests ADD COLUMN seq {int} NOT NULL DEFAULT 0;
CREATE TABLE sent (
  id {serial}, peer TEXT NOT NULL, message_id TEXT NOT NULL UNIQUE, context_id TEXT,
  text TEXT NOT NULL, sent {int} NOT NULL, channel TEXT NOT NULL, state TEXT NOT NULL,
  reply_to TEXT, request_id TEXT, address TEXT);
CREATE INDEX sent_peer ON sent (peer, sent);
CREATE TABLE peers (did TEXT PRIMARY KEY, relay TEXT, updated {int} NOT NULL);
CREATE TABLE relayed (
  id {serial}, sender TEXT NOT NULL, deposit_id TEXT NOT NULL, message_id TEXT,
  outcome TEXT NOT NULL, reason TEXT, detail TEXT, request_id TEXT, at {int} NOT NULL,
  shown {int} NOT NULL DEFAULT 0, UNIQUE (sender, deposit_id))
"""


# Version 6: the Web Bot Auth verdict on the HTTP request that carried a message (JSON).
_V6 = """
ALTER TABLE inbox ADD COLUMN wba TEXT;
ALTER TABLE requests ADD COLUMN wba TEXT
"""


# Version 7: turn-check finds what it has not shown through an index, not a scan of every
# deposit ever drained; a claim names its claimant (host:pid:start), so a newer turn-check
# tells a live one's rows from a killed one's.
_V7 = """
CREATE INDEX relayed_shown ON relayed (shown, id);
ALTER TABLE relayed ADD COLUMN claimant TEXT
"""


# Version 8: each sender's KeyState pin (``keystate_pins.py``): created with the store (and
# by ``db upgrade``), so receiving never runs DDL inside a drain's or a door's transactions.
_V8 = """
CREATE TABLE keystate_pins (
  root_did TEXT PRIMARY KEY, epoch {int} NOT NULL, root_key TEXT NOT NULL,
  record TEXT NOT NULL, pinned {int} NOT NULL)
"""
# Version 9: readers read the inbox by ``seq`` (its ``id``, store-wide, strictly increasing:
# rows are never deleted, so SQLite never reuses one). Each filter a reader may give has an
# index ending in ``id``, so "50 after a cursor" is a range scan whatever the inbox holds.
# On PostgreSQL every insert into the inbox announces the commit (``NOTIFY`` is sent when,
# and only if, the transaction commits): what ``Database.changes`` listens for. SQLite
# needs nothing: a watch sees any commit in the file's ``data_version``.
_V9_INDEXES = """
CREATE INDEX IF NOT EXISTS inbox_sender_seq ON inbox (sender, id);
CREATE INDEX IF NOT EXISTS inbox_context_seq ON inbox (context_id, id);
CREATE INDEX IF NOT EXISTS inbox_reply_seq ON inbox (reply_to, id)
"""
# (one line per statement: a migration is split on ``;`` at the end of a line; each can
# run again, as a store rolled back to an older version by hand is upgraded)
_V9_PG_NOTIFY = """
CREATE OR REPLACE FUNCTION inbox_committed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('{channel}', TG_TABLE_SCHEMA); RETURN NULL; END $$;
DROP TRIGGER IF EXISTS inbox_committed ON inbox;
CREATE TRIGGER inbox_committed AFTER INSERT ON inbox FOR EACH STATEMENT EXECUTE FUNCTION inbox_committed()
"""  # noqa: E501
# Version 13 (issue 18 §1): a seq is committed in order. PostgreSQL takes a sequence value at
# INSERT, not at commit: with two writers (two door processes, a door and a drain) 12 could
# commit while 11 is still in flight, and a reader that saw 12 would move its cursor past 11
# for ever. So every INSERT into the inbox first takes a lock of this store's inbox, held
# until its transaction ends: a BEFORE STATEMENT trigger, which fires before any of the
# statement's rows (their ``id`` defaults included) is made. A writer's seqs are then taken
# only after every earlier writer committed or rolled back, and a reader that sees a seq
# sees every committed one below it. Writers wait for each other only from their inbox
# INSERT to their commit (the door's group commit: one statement, then COMMIT); everything
# before it (the rate counts, the lookups, the signatures) still runs side by side. The key
# is the table's own OID (one per store in a database) in a key space of its own (two int4
# keys never meet the one-bigint keys of ``pg_advisory_xact_lock(store)``). SQLite needs
# nothing: its writers run one at a time (``BEGIN IMMEDIATE``), each commits before the next
# takes a rowid.
_V13_PG_IN_ORDER = """
CREATE OR REPLACE FUNCTION inbox_in_order() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock({tag}, TG_RELID::int4); RETURN NULL; END $$;
DROP TRIGGER IF EXISTS inbox_in_order ON inbox;
CREATE TRIGGER inbox_in_order BEFORE INSERT ON inbox FOR EACH STATEMENT EXECUTE FUNCTION inbox_in_order()
"""  # noqa: E501
INBOX_LOCK_TAG = 0x6D736571  # "mseq": the first int4 of the inbox's lock key

# Version 11 (issue 20): introductions (``introductions.py``, docs/trust.md): the vouch a held
# request came with (``held_vouches``, by request id: JSON, the gate's verdict and the
# credential's facts); the senders the gate admitted as introduced; credentials this identity
# issued, and those it holds. Every statement can run again (a store rolled back by hand).
INTRODUCTION_TABLES = """
CREATE TABLE IF NOT EXISTS held_vouches (request_id TEXT PRIMARY KEY, vouch TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS introduced (
  sender TEXT PRIMARY KEY, issuer TEXT NOT NULL, credential_id TEXT NOT NULL,
  doc TEXT NOT NULL, at {int} NOT NULL);
CREATE TABLE IF NOT EXISTS intros_issued (
  id TEXT PRIMARY KEY, subject TEXT NOT NULL, target TEXT NOT NULL, mode TEXT NOT NULL,
  doc TEXT NOT NULL, issued {int} NOT NULL, valid_until {int} NOT NULL);
CREATE TABLE IF NOT EXISTS intros_held (
  id TEXT PRIMARY KEY, issuer TEXT NOT NULL, target TEXT NOT NULL, doc TEXT NOT NULL,
  url TEXT, relay TEXT, enc_pub TEXT, valid_until {int} NOT NULL, received {int} NOT NULL);
CREATE INDEX IF NOT EXISTS intros_held_target ON intros_held (target, valid_until)
"""


# Version 10: the contact book (``contacts.py``): one row per peer (the owner's name for
# it, how it is reached and where that came from) and each source it came by. The
# contacts invites made so far come along (reach from the signed invite or claim; the name
# they gave is their own words and stays in ``contacts``, never a name here).
_V10 = """
CREATE TABLE IF NOT EXISTS contact_book (
  did TEXT PRIMARY KEY, name TEXT, name_key TEXT UNIQUE, door TEXT, door_from TEXT,
  relay TEXT, enc_pub TEXT, relay_from TEXT, first_seen {int} NOT NULL,
  last_seen {int} NOT NULL);
CREATE TABLE IF NOT EXISTS contact_sources (
  did TEXT NOT NULL, source TEXT NOT NULL, first_seen {int} NOT NULL, last_seen {int} NOT NULL,
  PRIMARY KEY (did, source));
INSERT INTO contact_book (did, door, door_from, relay, enc_pub, relay_from, first_seen, last_seen) SELECT did, url, CASE WHEN url IS NULL THEN NULL ELSE 'invite' END, CASE WHEN relay IS NULL OR enc_pub IS NULL THEN NULL ELSE relay END, CASE WHEN relay IS NULL OR enc_pub IS NULL THEN NULL ELSE enc_pub END, CASE WHEN relay IS NULL OR enc_pub IS NULL THEN NULL ELSE 'invite' END, since, since FROM contacts WHERE true ON CONFLICT (did) DO NOTHING;
INSERT INTO contact_sources (did, source, first_seen, last_seen) SELECT did, 'invite', since, since FROM contacts WHERE true ON CONFLICT (did, source) DO NOTHING
"""  # noqa: E501


def door_schema() -> Schema:
    from muretai_cli.db import CHANGES_CHANNEL, Schema
    from muretai_cli.inbox.invites import INVITE_TABLES
    from muretai_cli.inbox.proposals import VERIFIED_TABLES, VOUCH_TABLES

    # Version 5: invites, their claims, and the contacts they made.
    return Schema("door", ({"sqlite": _V1_SQLITE, "postgresql": _V1_PORTABLE},
                           {"sqlite": _V2_SQLITE, "postgresql": ""}, _V3, _V4, INVITE_TABLES,
                           _V6, _V7, _V8, {"sqlite": _V9_INDEXES,
                                           "postgresql": _V9_INDEXES + ";" + _V9_PG_NOTIFY.replace(
                                               "{channel}", CHANGES_CHANNEL)},
                           _V10,  # Version 10 (issue 18): the contact book.
                           # Version 11 (issue 20, the gate): introduced, issued, held.
                           INTRODUCTION_TABLES,
                           # Version 12 (issue 20): introductions proposed, answered, revoked.
                           VOUCH_TABLES,
                           # Version 13 (issue 18 §1): inbox seqs committed in order.
                           {"sqlite": "", "postgresql": _V13_PG_IN_ORDER.replace(
                               "{tag}", str(INBOX_LOCK_TAG))},
                           # Version 14 (issue 20's gate figure): credentials verified once.
                           VERIFIED_TABLES))


