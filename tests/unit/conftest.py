"""Unit tests open no socket, start no process and use no PostgreSQL: what needs one of
them is end to end (``tests/e2e``). Each attempt is refused (an ``OSError``, as a network
that is down would say) and fails the test that made it, even where the code under test
swallowed the error."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _no_sockets_no_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    attempts: list[str] = []

    def refuser(what: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            attempts.append(what)
            raise OSError(f"a unit test may not {what}: move the test to tests/e2e")
        return refuse

    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, refuser(f"{name} a socket"))
    monkeypatch.setattr(socket, "create_connection", refuser("open a connection"))
    monkeypatch.setattr(subprocess.Popen, "__init__", refuser("start a process"))
    monkeypatch.setattr(os, "fork", refuser("fork"))
    monkeypatch.setattr(os, "posix_spawn", refuser("spawn a process"))
    yield
    assert not attempts, f"a unit test tried to {', '.join(sorted(set(attempts)))}"


@pytest.fixture(scope="session")
def pg_server() -> str:
    pytest.fail("a unit test uses no PostgreSQL: move the test to tests/e2e")
