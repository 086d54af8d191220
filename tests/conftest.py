"""Shared fixtures: an isolated muretai home per test, the golden vectors, live servers."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.repo_files import load_vectors
from tests.store_helpers import Role, with_path


def pytest_configure(config: pytest.Config) -> None:
    """Every ``CliRunner().invoke(app, ...)`` of the whole tree runs the one click command
    ``tests.cli_helpers.command()`` builds per process, not a fresh conversion each time."""
    import typer.testing

    from tests.cli_helpers import cached_command_for

    real = typer.testing._get_command  # type: ignore[attr-defined]
    setattr(typer.testing, "_get_command", cached_command_for(real))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the PostgreSQL server is marked ``pg``; the longest tests go first,
    then the slow end-to-end ones, so parallel workers do not end the run waiting on one."""
    for item in items:
        if "pg_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.pg)
    items.sort(key=lambda item: (item.get_closest_marker("longest") is None,
                                 item.get_closest_marker("slow") is None))


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Every test gets its own $MURETAI_HOME and no stray settings from the caller."""
    for name in ("MURETAI_KEYS", "MURETAI_HOME", "MURETAI_DB", "MURETAI_AS", "FORCE_COLOR",
                 "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "muretai-home"
    monkeypatch.setenv("MURETAI_HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    yield home


@pytest.fixture(scope="session")
def wire_vectors() -> dict[str, Any]:
    return load_vectors("wire_vectors.json")


# -- PostgreSQL (started by ./dev test and .ci/run through .ci/pg) ---------------------------
PG_ENV = "MURETAI_TEST_PG"


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The URL of the throwaway PostgreSQL server; skips (or fails, in CI) without one."""
    url = os.environ.get(PG_ENV)
    if not url:
        if os.environ.get("MURETAI_REQUIRE_PG") == "1":
            pytest.fail(f"{PG_ENV} is not set but MURETAI_REQUIRE_PG=1 (run through ./dev test)")
        pytest.skip(f"no PostgreSQL for tests ({PG_ENV} unset; ./dev test starts one)")
    return url


@pytest.fixture(scope="module")
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh database per test module (stores inside it keep to their own schemas), named
    for the worker that made it: parallel workers share the server, never a database."""
    import psycopg

    name = f"t_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{secrets.token_hex(6)}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    parts = urlsplit(pg_server)
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_door(pg_url: str) -> tuple[str, str]:
    """A fresh identity "door" with its store initialised in the module's PostgreSQL
    database (``db init``, as before ``serve --db``): (name, did)."""
    from tests.cli_helpers import new_identity, run_json

    did = new_identity("door")
    assert run_json("db", "init", "--as", "door", "--db", pg_url)[0] == 0
    return "door", did


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives, once per backend: a SQLite file path or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "store.sqlite3")
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def b58_decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every base58 string decoded while the test runs: a DID past the cap must
    be refused before its (quadratic) decode, which no wall-clock bound shows reliably."""
    import base58

    lengths: list[int] = []
    real = base58.b58decode

    def spy(value: str | bytes, *args: Any, **kw: Any) -> bytes:
        lengths.append(len(value))
        return real(value, *args, **kw)

    monkeypatch.setattr(base58, "b58decode", spy)
    return lengths


@pytest.fixture
def role(pg_server: str) -> Iterator[Role]:
    """A fresh database and a plain (non-superuser) role that may create schemas in it."""
    import psycopg

    name = f"a_{secrets.token_hex(5)}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(f"GRANT CREATE ON DATABASE {name} TO {name}")
    admin = with_path(pg_server, path=f"/{name}")
    yield Role(admin, with_path(admin, user=name), name)
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"DROP ROLE IF EXISTS {name}")
