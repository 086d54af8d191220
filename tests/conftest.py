"""Shared fixtures: an isolated muretai home per test, the golden vectors, live servers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

VECTORS = Path(__file__).resolve().parents[1].parent / "shared" / "vectors"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Every test gets its own $MURETAI_HOME and no stray settings from the caller."""
    for name in ("MURETAI_KEYS", "MURETAI_HOME", "FORCE_COLOR", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "muretai-home"
    monkeypatch.setenv("MURETAI_HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    yield home


def load_vectors(name: str) -> dict[str, Any]:
    path = VECTORS / name
    if not path.exists():
        pytest.skip(f"golden vectors not found at {path} (../shared/vectors is absent)")
    data: dict[str, Any] = json.loads(path.read_bytes())
    return data


@pytest.fixture(scope="session")
def wire_vectors() -> dict[str, Any]:
    return load_vectors("wire_vectors.json")
