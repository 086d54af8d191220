"""A ``muretai`` process's exit skips the interpreter's walk for cycles (``gc.freeze`` as its
last ``atexit`` hook, ``cli._quick_exit``): most of a command's exit was that walk. Only the
process that is the command does it; a command run in a test's process leaves the
collector alone."""

from __future__ import annotations

import atexit
import gc
import sys
from collections.abc import Callable
from typing import Any

import pytest

from muretai_cli.cli import main


def _registered(monkeypatch: pytest.MonkeyPatch) -> list[Callable[..., Any]]:
    hooks: list[Callable[..., Any]] = []

    def register(hook: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
        hooks.append(hook)
        return hook

    monkeypatch.setattr(atexit, "register", register)
    return hooks


def test_the_command_process_freezes_the_collector_at_its_exit(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    hooks = _registered(monkeypatch)
    monkeypatch.setattr(sys, "argv", ["muretai", "--version"])
    with pytest.raises(SystemExit):
        main()
    assert "muretai" in capsys.readouterr().out
    assert gc.freeze in hooks


def test_a_command_run_in_another_process_leaves_the_collector_alone(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    hooks = _registered(monkeypatch)
    with pytest.raises(SystemExit):
        main(["--version"])
    assert "muretai" in capsys.readouterr().out
    assert gc.freeze not in hooks
