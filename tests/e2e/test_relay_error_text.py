"""A relay's refusal text is peer text (issue 22 §7): on a terminal it is made inert by the
CLI's one escaping function (``cli._out.safe``), with ``--json`` and without; in the JSON
document it keeps its value as escapes. A relay's error code is taken as a name only when
it is one (``[a-z0-9-]``), else it is ``relay-refused``.

Before, ``turn-check --json`` wrote the relay's message raw to stderr: ESC, BEL, a CSI,
RLO and U+2028 reached the terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.cli_helpers import new_identity, run
from tests.servers import serve_asgi

# each alone must be caught: a failure names the one that got through
HOSTILE = ["\x1b", "\x07", "\x9b", "\u202e", "\u2028", "\u2029", "\x00", "\x7f", "\u200b"]
MESSAGE = "busy " + "".join(f"{c}[2J{i}" for i, c in enumerate(HOSTILE)) + " retry"


def _leaks(text: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in HOSTILE if c in text]


def _relay(status: int, code: str) -> Starlette:
    async def refuse(request: Request) -> Response:
        await request.body()
        return JSONResponse({"error": code, "message": MESSAGE}, status_code=status,
                            headers={"retry-after": "5"})

    return Starlette(routes=[Route("/listen", refuse, methods=["POST"])])


def _turn_check(*flags: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "muretai_cli", "op", "--as", "me",
                           "turn-check", *flags], capture_output=True, timeout=60,
                          env=os.environ.copy(), check=False)


@pytest.mark.parametrize("flags", [["--json"], []], ids=["json", "text"])
def test_a_relays_refusal_reaches_the_terminal_inert(flags: list[str]) -> None:
    with serve_asgi(_relay(503, "unavailable")) as url:
        new_identity("me")
        assert run("id", "relay", "me", url).exit_code == 0
        proc = _turn_check(*flags)
    err, out = proc.stderr.decode(), proc.stdout.decode()
    assert proc.returncode == 4, err
    assert "unavailable" in err and "retry" in err  # the text is shown, made inert
    assert _leaks(err) == [] and _leaks(out) == []
    if flags:
        doc = json.loads(out)
        assert doc["ok"] is False and doc["error"]["code"] == "unavailable"
        assert MESSAGE[:150] in doc["error"]["message"]  # the same value, as escapes


def test_a_hostile_error_code_is_not_taken_as_a_name() -> None:
    with serve_asgi(_relay(429, "\x1b[31mzzcode\u202e")) as url:
        new_identity("me")
        assert run("id", "relay", "me", url).exit_code == 0
        proc = _turn_check("--json")
    doc = json.loads(proc.stdout)
    assert doc["error"]["code"] == "relay-refused"
    assert _leaks(proc.stderr.decode()) == [] and "zzcode" not in proc.stderr.decode()
