"""``op --as NAME inbox|requests|senders``: stub for the receiving side."""

from __future__ import annotations

import typer


def register(op_app: typer.Typer) -> None:
    """Add the owner's commands to the ``op`` group."""
