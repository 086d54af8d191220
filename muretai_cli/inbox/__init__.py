"""What happens to a received signed message, whatever carried it (a door POST or a relay
drain): the ladder after transport, consent, and the per-identity store.

    ladder.py   the rungs, cheapest first, each refusing with a JSON-RPC code
    reader.py   many readers: the inbox after a cursor (``seq``), and a wait for what comes
    contacts.py the contact book: each peer's name (the owner's), reach and sources
    consent.py  the owner's rules (policy, grants, holds, allow/block lists, introductions):
                admit, hold or refuse; the trust gate
    vouches.py  what the gate asks beyond a credential's signature (``VouchBook``)
    store/      the identity store (``IdentityStore``): one module per table group (grants,
                uses, rates, receipts and replay, decisions and requests, sent and
                timeline, drained deposits) over one Database

Imports sqlite3 only from its submodules, so the CLI pays for it only in the commands that
use it.
"""

# The room's public surface: its modules (each imported on first use, never here).
__all__ = ["arrival", "claims", "consent", "contacts", "invites", "ladder", "proposals",
           "reader", "relayed", "revocations", "store", "vouches"]
