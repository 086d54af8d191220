"""``muretai doctor``: read-only, each line ok or a problem with the command that fixes it."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from tests.cli_helpers import new_identity, run
from tests.servers import serve_asgi


def doctor(*args: str) -> tuple[int, dict[str, Any]]:
    result = run("doctor", *args, "--json")
    doc = json.loads(result.stdout)
    assert next(iter(doc)) == "ok"
    return result.exit_code, doc


def status(doc: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {c["check"]: (c["status"], c["fix"]) for c in doc["checks"]}


def test_a_fresh_machine_is_told_to_make_an_identity(_isolated_env: Path) -> None:
    code, doc = doctor()
    assert code == 1 and doc["ok"] is False
    assert status(doc)["home"] == ("problem", "muretai id new NAME")
    assert status(doc)["identities"] == ("problem", "muretai id new NAME")
    assert not _isolated_env.exists(), "doctor only looks: it made no home"


def test_a_healthy_home(_isolated_env: Path) -> None:
    new_identity("me")
    code, doc = doctor()
    checks = status(doc)
    assert code == 0 and doc["problems"] == 0, doc
    assert checks["home"][0] == checks["keys folder"][0] == checks["identity me"][0] == "ok"
    assert checks["door store me"][0] == "skipped"  # no `serve` yet
    assert checks["pins"][0] == "ok" and checks["clock"][0] == "skipped"
    text = run("doctor").stdout
    assert text.splitlines()[-1] == "all good"


def run_fix(fix: str) -> None:
    argv = shlex.split(fix)
    if argv[0] == "muretai":
        assert run(*argv[1:]).exit_code == 0
    else:
        subprocess.run(argv, check=True)


def test_a_loose_key_file_is_a_problem_and_the_fix_works(_isolated_env: Path) -> None:
    new_identity("me")
    key = _isolated_env / "keys" / "me.key"
    key.chmod(0o644)
    code, doc = doctor("--as", "me")
    assert code == 1
    state, fix = status(doc)["identity me"]
    assert state == "problem" and fix == f"chmod 600 {key}"
    run_fix(fix)
    assert doctor("--as", "me")[0] == 0


def test_an_open_home_folder(_isolated_env: Path) -> None:
    new_identity("me")
    _isolated_env.chmod(0o755)
    code, doc = doctor()
    assert code == 1 and status(doc)["home"] == ("problem", f"chmod 700 {_isolated_env}")


def test_an_unknown_identity_is_named(_isolated_env: Path) -> None:
    new_identity("me")
    code, doc = doctor("--as", "nobody")
    assert code == 1 and status(doc)["identity nobody"] == ("problem", "muretai id new nobody")


def test_an_old_door_schema_names_the_upgrade(_isolated_env: Path) -> None:
    new_identity("me")
    assert run("op", "contact", "issue", "--as", "me", "--uses", "1").exit_code == 0
    code, doc = doctor("--as", "me")
    assert code == 0 and status(doc)["door store me"][0] == "ok"
    (db,) = (_isolated_env / "doors").glob("*.sqlite3")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE muretai_schema SET version = 1")
    conn.close()
    code, doc = doctor("--as", "me")
    state, fix = status(doc)["door store me"]
    assert code == 1 and state == "problem" and fix == "muretai db upgrade --as me"


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Scope]]
Send = Callable[[Scope], Awaitable[None]]


def dated(date: str) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """An ASGI app whose every answer carries the HTTP Date ``date`` (a peer's clock)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"date", date.encode()), (b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    return app


def test_clock_skew_against_a_peer(_isolated_env: Path) -> None:
    new_identity("me")
    with serve_asgi(dated("Mon, 01 Jan 2024 00:00:00 GMT"), date_header=False) as url:
        code, doc = doctor("--peer", url)
    state, fix = status(doc)["clock"]
    assert code == 1 and state == "problem" and "NTP" in (fix or "")
    message = next(c["message"] for c in doc["checks"] if c["check"] == "clock")
    assert "ahead of" in message and "±300 s" in message
    from email.utils import formatdate

    with serve_asgi(dated(formatdate(usegmt=True)), date_header=False) as url:
        code, doc = doctor("--peer", url)
    assert code == 0 and status(doc)["clock"][0] == "ok"


def test_doctor_in_a_real_process_never_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "MURETAI_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "muretai_cli", "doctor"], capture_output=True,
                          text=True, env=env, check=False)
    assert proc.returncode == 1 and "fix: muretai id new NAME" in proc.stdout
    assert not home.exists()


def test_relay_and_card_publication(tmp_path: Path) -> None:
    from tests.relay_helpers import live_relay

    new_identity("me")
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        assert status(doctor("--as", "me")[1])["relay me"][0] == "skipped"
        assert run("id", "relay", "me", relay.url).exit_code == 0
        code, doc = doctor("--as", "me")
        assert code == 1 and status(doc)["relay me"] == ("problem",
                                                         "muretai card publish --as me")
        run_fix("muretai card publish --as me")
        code, doc = doctor("--as", "me")
        assert code == 0 and status(doc)["relay me"][0] == "ok", doc


def test_clock_against_our_own_door_and_relay(tmp_path: Path) -> None:
    """Our door and relay send an HTTP Date, so doctor can read their clock (it said
    'skipped' for both while the transport left the header out)."""
    from tests.door_helpers import live_door
    from tests.servers import start_relay

    new_identity("me")
    with live_door() as door:
        _, doc = doctor("--peer", door.base)
    assert status(doc)["clock"][0] == "ok", doc
    relay = start_relay(tmp_path, "--db", str(tmp_path / "relay.db")).wait_ready()
    try:
        _, doc = doctor("--peer", relay.base)
    finally:
        relay.stop()
    assert status(doc)["clock"][0] == "ok", doc
