"""Web Bot Auth on the visiting side: sign every request a command makes (seam §8).

With ``--wba`` (or ``MURETAI_WBA=1``) and an identity, the safe client adds
``Signature-Input``, ``Signature`` and ``Signature-Agent`` to each request, covering the
request's ``@authority``. ``Signature-Agent`` names where the identity's key directory is
served: the identity's own door (``--wba-agent URL``), or by default its DID-addressed site.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from muretai_cli.seam import SigningKey, sign_request
from muretai_cli.urls import DID_SITE_HOST


def did_site_url(did: str) -> str:
    """The DID-addressed site of a did:key: ``https://muretai.net/<multibase key>``."""
    return f"https://{DID_SITE_HOST}/{did.rsplit(':', 1)[-1]}"


def request_signer(key: SigningKey, *, agent: str | None = None,
                   clock: Callable[[], float] = time.time) -> Callable[[str], dict[str, str]]:
    """Headers signing one request to a URL as ``key``, fresh for each request."""
    agent_url = agent or did_site_url(key.did)
    return lambda url: sign_request(key, url, signature_agent=agent_url, created=int(clock()))
