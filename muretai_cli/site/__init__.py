"""The site check: what a website tells agents, and which of it can be proven.

    check_site      every check against one base URL, as a ``SiteReport``
    check_public    the address rule (private and loopback refused unless allowed)
    SiteReport      the findings, in order; ``ok`` unless a check FAILED
    Finding         one check: PASS / FAIL / WARN / INFO, facts, and a remedy when not PASS
"""

from __future__ import annotations

from muretai_cli.site._check import ORDER, TITLES, check_site, site_base
from muretai_cli.site._guard import check_public
from muretai_cli.site._linkage import domain_linkage, domain_of
from muretai_cli.site._report import Finding, Remedy, SiteReport, Status

__all__ = ["ORDER", "TITLES", "Finding", "Remedy", "SiteReport", "Status", "check_public",
           "check_site", "domain_linkage", "domain_of", "site_base"]
