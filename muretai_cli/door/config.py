"""How a door runs: ``DoorConfig``, valid on construction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import InputError
from muretai_cli.inbox.consent import POLICIES, Policy
from muretai_cli.transport import IDLE_SECONDS, MAX_CONNECTIONS, MAX_PER_CLIENT

if TYPE_CHECKING:
    from muretai_cli.urls import BaseUrl

__all__ = ["DoorConfig"]


@dataclass(frozen=True)
class DoorConfig:
    """How a door runs. Valid on construction: a bad value is the project's ``InputError``
    naming the setting, so an invalid config never exists."""

    name: str
    url: BaseUrl
    policy: Policy = "quarantine"
    rate_per_sender: int = 60
    rate_total: int = 600
    org: dict[str, Any] | None = None
    durable: bool = False
    slow_seconds: float = 10.0
    max_connections: int = MAX_CONNECTIONS  # see transport.server.Admission
    max_per_client: int = MAX_PER_CLIENT
    idle_seconds: float = IDLE_SECONDS
    shared_rate: bool = False  # count rates in the store (several processes) not in memory
    did_configuration: bytes | None = None  # served at /.well-known/did-configuration.json
    wba_allow_private: bool = False  # fetch visitors' key directories from private addresses
    prefer: tuple[str | dict[str, str], ...] = ()  # agentEntry.prefer (door/publish.py)
    skills: tuple[dict[str, Any], ...] = ()  # the owner's own A2A skills (door/publish.py)
    keystate: dict[str, Any] | None = None  # the identity's current KeyState (id rotate)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise InputError("bad-policy", f"--dm-policy {str(self.policy)[:40]!r} is not a "
                                           "policy",
                             hint="use open, quarantine, closed or introduced")
        for name, value in (("--rate-per-sender", self.rate_per_sender),
                            ("--rate-total", self.rate_total),
                            ("--max-connections", self.max_connections),
                            ("--max-per-client", self.max_per_client)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError("bad-limit", f"{name} {value!r} is not a whole number >= 0 "
                                              "(0 disables)")
        for name, seconds in (("--slow-seconds", self.slow_seconds),
                              ("--idle-seconds", self.idle_seconds)):
            if not seconds > 0:
                raise InputError("bad-limit", f"{name} {seconds!r} must be more than 0")
        if not self.name:
            raise InputError("bad-name", "a door needs a name")


