"""The wire's limits and windows, each defined once (table: docs/seam.md, "Limits and windows").

Every module that judges a time or bounds a size imports its number from here, so a window
cannot drift between the door, the relay drain, a claim and an offline verify. Seconds for
times, characters or bytes as named. Nothing here imports anything.
"""

from __future__ import annotations

# -- time ---------------------------------------------------------------------------------
# How far any clock may run ahead of the verifier's: a signed thing dated later is refused
# from-the-future (a message, a relayed message, a grant's or membership's iat, a card
# envelope, a Web Bot Auth `created`).
CLOCK_SKEW = 300
# How far a signed message's timestamp may stray from the verifier's clock, either way: the
# door, the reply check, offline `verify message`, a redeem and a claim all judge by it.
MESSAGE_WINDOW = 300
# How old a message carried by a relay may be when its reader drains it: it waits for days
# (the reader is offline), not for ever. Ahead of the clock: CLOCK_SKEW.
RELAYED_MAX_AGE = 30 * 24 * 3600
# How far a grant's or org membership's `iat` may be in the future.
ARTIFACT_IAT_SKEW = CLOCK_SKEW
# How long a verifier honours a signed card envelope; older is stale.
ENVELOPE_MAX_AGE = 6 * 3600
ENVELOPE_MAX_AHEAD = CLOCK_SKEW
# Web Bot Auth (seam §8): the lifetime we sign a request for, the longest we accept (a
# bearer header), and the same pair for a key directory.
REQUEST_WINDOW = 300
MAX_REQUEST_LIFETIME = 600
DIRECTORY_WINDOW = 7200
MAX_DIRECTORY_LIFETIME = 7 * 86400
# An introduction request (the subject's signed `introduce-me-to:` message) is live this
# long, judged at the credential's issuanceDate, not at the verifier's clock: a stored
# introduction does not start failing as its request ages. Ahead of it: CLOCK_SKEW.
INTRO_REQUEST_WINDOW = 30 * 86400

# -- sizes --------------------------------------------------------------------------------
MAX_SAFE_INT = 2**53 - 1  # the largest integer a signed payload may carry (±)
MAX_DEPTH = 128  # containers nested deeper are refused at the parse boundary
MAX_ID_LEN = 256  # characters of a messageId (and of a contextId at the door)
MAX_BLOB_CHARS = 8 * 1024 * 1024  # base64 characters of one sealed box
MAX_TOKEN_CHARS = 16384  # characters of one domain-linkage credential (a compact JWS)
MAX_LINKED_DIDS = 64  # credentials read from one did-configuration.json
MAX_SAME_ISSUER = 2  # of those, how many naming the DID asked about are verified
MAX_HEADER_CHARS = 8192  # characters of a Signature / Signature-Input header
MAX_DIRECTORY_BYTES = 65536  # bytes of a Web Bot Auth key directory
MAX_BODY = 1024 * 1024  # bytes of one JSON-RPC request a door reads
MAX_TEXT = 64 * 1024  # UTF-8 bytes of a message's text
# `card publish` again within this of the envelope a relay holds signs just after it.
REPUBLISH_AHEAD = 5
MAX_VC_CHARS = 32 * 1024  # characters of one credential a message carries (metadata.vc, held_vc)

# -- introductions: proposals and revocations (ours: docs/trust.md) ----------------------
# A proposal is held for its target's review; an introducer may have this many pending at
# one target (like a held stranger's messages, HELD_PER_SENDER), and all introducers
# together this many (HELD_TOTAL). Past either: refused `proposals-full`, nothing kept.
PROPOSALS_PER_INTRODUCER = 20
PROPOSALS_TOTAL = 1000
PROPOSAL_MAX_AGE = 30 * 86400  # how old a proposal's or response's iat may be (a relay's)
MAX_PROPOSAL_NOTE = 1000  # characters of a proposal's note
MAX_REVOKED = 4096  # ids in one issuer's revocation list
# A checker caches issuers' lists: at most this many issuers, each for at most this long.
REVOCATION_CACHE_ENTRIES = 256
REVOCATION_CACHE_SECONDS = 300
REVOCATION_FETCH_SECONDS = 5  # the longest one fetch of an issuer's list may take
MAX_REVOCATIONS_BYTES = 512 * 1024  # bytes of one fetched revocation list

# -- contacts ----------------------------------------------------------------------------
MAX_CONTACT_NAME = 64  # characters of the name an owner gives a peer (`op contact name`)
