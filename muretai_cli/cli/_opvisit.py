"""``op --as ME contact ...`` and ``op --as ME handoff ...``: stub for the visiting side."""

from __future__ import annotations

import typer

contact_app = typer.Typer(no_args_is_help=True, help="Contacts and signed DMs.")
handoff_app = typer.Typer(no_args_is_help=True, help="Follow a handoff (with confirmation).")
