"""What happens to a received signed message, whatever carried it (a door POST or a relay
drain): the ladder after transport, consent, and the per-identity store.

    ladder.py   the rungs, cheapest first, each refusing with a JSON-RPC code
    consent.py  the owner's rules (policy, grants, holds, allow/block lists): admit or refuse
    store.py    the per-identity database (grants, connections, inbox, held requests, lists,
                replay)

Imports sqlite3 only from its submodules, so the CLI pays for it only in the commands that
use it.
"""
