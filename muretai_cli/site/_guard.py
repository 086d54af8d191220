"""The address rule: a site check dials public addresses only, unless told otherwise.

The name is resolved here and every address it yields must be public; the HTTP client
resolves it again when it connects, so a name whose owner answers differently the second
time is not stopped by this (DNS rebinding). ``--allow-private`` is for your own staging door.
"""

from __future__ import annotations

from muretai_cli.errors import InputError
from muretai_cli.net import private_addresses
from muretai_cli.urls import BaseUrl


def check_public(base: BaseUrl, *, allow_private: bool) -> None:
    """Refuse a site on a private or loopback address unless ``allow_private``."""
    if allow_private:
        return
    found = private_addresses(base.host)
    if found:
        raise InputError("private-address", f"{base.host} resolves to a private or loopback "
                                            f"address ({', '.join(found[:4])})",
                         hint="add --allow-private to check a door of your own on this "
                              "network (a CI staging door, a laptop)")
