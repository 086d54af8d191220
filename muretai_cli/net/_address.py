"""The address rule: which hosts name only globally routable addresses.

The name is resolved here; the HTTP client resolves it again when it connects, so a name
whose owner answers differently the second time is not stopped by this (DNS rebinding,
seam §11). What is refused here is every address a name yields that is not global.
"""

from __future__ import annotations

import ipaddress
import socket

from muretai_cli.errors import Unreachable


def private_addresses(host: str) -> list[str]:
    """The addresses ``host`` names that are not globally routable (loopback, RFC 1918, …)."""
    bare = host.strip("[]")
    try:
        addresses = [ipaddress.ip_address(bare)]
    except ValueError:
        try:
            infos = socket.getaddrinfo(bare, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise Unreachable("unresolvable", f"{bare}: cannot resolve ({exc})") from None
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    return sorted({str(a) for a in addresses if not a.is_global})
