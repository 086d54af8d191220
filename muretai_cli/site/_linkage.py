"""Domain linkage as a visitor sees it: fetch a site's did-configuration.json and say whether
it binds a DID to this domain: ``bound``, ``not-bound`` (published, and it does not) or
``not-published``. One function, used by ``card fetch`` and ``site check``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from muretai_cli.errors import DeadlineExceeded, MuretaiError, Refused, Unreachable
from muretai_cli.urls import BaseUrl

if TYPE_CHECKING:
    from muretai_cli.net import SafeClient


def domain_of(base: BaseUrl) -> str:
    """The domain a credential for this base names: host, and the port when not default."""
    return base.host + (f":{base.port}" if base.port is not None else "")


def domain_linkage(base: BaseUrl, did: str, *, client: SafeClient, now: int) -> dict[str, Any]:
    """``{"state", "url", …}``: the DID-configuration verdict for ``did`` on ``base``'s domain.

    ``bound`` carries the credential's ``origin``, ``nbf`` and ``exp``; ``not-bound`` the
    reason; ``not-published`` the HTTP status (or the fetch error). Never raises for the site's
    answer; only a broken URL would.
    """
    from muretai_cli.seam import DID_CONFIGURATION_PATH, linked_did, parse_document

    url = base.origin + DID_CONFIGURATION_PATH
    try:
        result = client.get(url)
    except (Refused, Unreachable, DeadlineExceeded) as exc:
        return {"state": "not-published", "url": url, "error": exc.code}
    if result.status != 200:
        return {"state": "not-published", "url": url, "status": result.status}
    try:
        link = linked_did(parse_document(result.body), domain=domain_of(base), did=did, now=now)
    except MuretaiError as exc:
        return {"state": "not-bound", "url": url, "reason": exc.code, "detail": exc.detail}
    return {"state": "bound", "url": url, **link.to_json()}
