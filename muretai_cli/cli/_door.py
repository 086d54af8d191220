"""``muretai serve`` and ``muretai contact ...``: stub for the receiving side."""

from __future__ import annotations

import typer

contact_app = typer.Typer(no_args_is_help=True, help="Issue, list and revoke contact grants.")


def register(app: typer.Typer) -> None:
    """Add ``serve`` (and anything else top-level) to the root app."""
