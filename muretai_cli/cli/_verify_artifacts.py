"""``verify grant`` and ``verify org``: stub, filled in by the visiting side's work."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the artifact verify commands to the ``verify`` group."""
