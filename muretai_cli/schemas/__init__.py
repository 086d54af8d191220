"""JSON Schemas (draft 2020-12) for the artifacts a CI validates, kept as package data.

A schema states a shape; it proves nothing about a signature. ``muretai verify`` is what
checks signatures, keys, expiry and the caller's pins. Use a schema to reject a malformed
artifact early, in any language.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from muretai_cli.errors import InputError

__all__ = ["load", "names", "text"]


def names() -> list[str]:
    """Every schema muretai ships, by name (the file name without ``.json``)."""
    return sorted(p.name[:-5] for p in resources.files(__package__).iterdir()
                  if p.name.endswith(".json"))


def text(name: str) -> str:
    """A schema's JSON text, or ``InputError('no-such-schema')`` naming the ones there are."""
    if name not in names():
        raise InputError("no-such-schema", f"no schema named {name[:80]!r}",
                         hint="one of: " + ", ".join(names()))
    return resources.files(__package__).joinpath(f"{name}.json").read_text("utf-8")


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(text(name))
    return doc
