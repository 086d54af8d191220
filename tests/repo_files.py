"""This repository's files and the shared golden vectors, for every test module."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]  # the repository
VECTORS = ROOT.parent / "shared" / "vectors"
REQUIRE_VECTORS = "MURETAI_REQUIRE_VECTORS"


def vector_file(name: str) -> Path:
    """A golden vector file; skips without ``../shared`` (fails if MURETAI_REQUIRE_VECTORS=1)."""
    path = VECTORS / name
    if not path.exists():
        why = f"golden vectors not found at {path} (../shared/vectors is absent)"
        if os.environ.get(REQUIRE_VECTORS) == "1":
            pytest.fail(f"{why} but {REQUIRE_VECTORS}=1")
        pytest.skip(why)
    return path


def load_vectors(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(vector_file(name).read_bytes())
    return data
