"""``$MURETAI_HOME``: identities, and small state files written atomically.

Layout::

    $MURETAI_HOME/            (default ~/.muretai, mode 700)
      keys/<name>.key         Ed25519 identities (mode 600), unless --keys / $MURETAI_KEYS
      verified/<key>.json     peers each identity checked out of band (op contact verify)
      listeners/<key>.lock    the relay listener's lease (flock: one listening process)
      ...                     pins, connections, trust list, door databases (other modules)
"""

from muretai_cli.home._connections import Connection, ConnectionStore
from muretai_cli.home._files import (
    atomic_write,
    ensure_private_dir,
    home_dir,
    open_to_others,
    read_json_file,
    write_json_file,
)
from muretai_cli.home._keys import Identity, KeyStore, keys_dir, valid_name
from muretai_cli.home._listener import (
    ListenerLease,
    ListenerState,
    hold_listener,
    listener_holder,
    listener_state,
)
from muretai_cli.home._names import dids_named
from muretai_cli.home._pins import Pin, PinStore
from muretai_cli.home._profiles import Profiles
from muretai_cli.home._records import KeyStatePins, MintedRecords
from muretai_cli.home._trust import TrustedOrg, TrustList
from muretai_cli.home._verified import VerifiedPeers

__all__ = [
    "Connection",
    "ConnectionStore",
    "Identity",
    "KeyStatePins",
    "KeyStore",
    "ListenerLease",
    "ListenerState",
    "MintedRecords",
    "Pin",
    "PinStore",
    "Profiles",
    "TrustList",
    "TrustedOrg",
    "VerifiedPeers",
    "atomic_write",
    "dids_named",
    "ensure_private_dir",
    "hold_listener",
    "home_dir",
    "keys_dir",
    "listener_holder",
    "listener_state",
    "open_to_others",
    "read_json_file",
    "valid_name",
    "write_json_file",
]
