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


WIRE_VECTORS = "wire_vectors.json"


def vector_cases(*group: str) -> list[Any]:
    """One ``pytest.param`` per case of a wire-vector group (``vector_cases("relay", "send")``),
    named for the case, for ``@pytest.mark.parametrize("case", ...)``: each case passes or
    fails on its own, and a group that is empty or absent is one case (None) that fails, so
    it cannot pass. Without the vectors file it is one case (None) that skips (or fails when
    they are required). The test takes its case through ``a_case``."""
    path = VECTORS / WIRE_VECTORS
    if not path.exists():
        return [pytest.param(None, id="no-vectors-file")]
    found: Any = json.loads(path.read_bytes())
    for key in group:
        found = found.get(key) if isinstance(found, dict) else None
    if not isinstance(found, list) or not found:
        return [pytest.param(None, id="empty-group")]
    return [pytest.param(case, id=str(case.get("name") or f"case-{i}"))
            for i, case in enumerate(found)]


def a_case(case: dict[str, Any] | None) -> dict[str, Any]:
    """The case ``vector_cases`` gave; None (no file, or an empty group) skips or fails."""
    if case is None:
        vector_file(WIRE_VECTORS)  # skips without the file, fails when they are required
        pytest.fail("the vector group is empty or absent: an empty group cannot pass")
    return case


def cases(group: Any, name: str) -> list[Any]:
    """A vector group's cases, for a test that needs them all at once; an empty or absent
    group fails the test instead of letting its loop pass on nothing."""
    assert isinstance(group, list) and group, f"the vector group {name} is empty or absent"
    return group
