"""Issue 22 §12-13: Ctrl-C exits 130 with an ``interrupted`` document; a deadline's hint
names what the command really has; a door's refusal says its reason and remedy in text.

Each test fails without its rule: the root's ``KeyboardInterrupt`` catch (click would say
"Aborted!" and exit 1), turn-check's own deadline hint (the net client's default named
``--timeout``, an option turn-check does not have), and ``visit.remedies.door_refusal``
(the text said only "Contact grant refused")."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.home import KeyStore, keys_dir
from tests.cli_helpers import new_identity, run
from tests.door_helpers import live_door
from tests.relay_helpers import LiveRelay, live_relay
from tests.waiting import wait_until

# Ctrl-C as at a terminal: a test run started in the background by a shell without job
# control has SIGINT ignored, a child inherits that, and Python then never raises
# KeyboardInterrupt (rightly: a background job keeps ignoring Ctrl-C). This small exec
# wrapper puts SIGINT back to its default before the CLI starts.
_CTRL_C_DEFAULT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                   "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")


@contextmanager
def _waiting_turn_check(tmp_path: Path, *args: str) -> Iterator[tuple[subprocess.Popen[str],
                                                                       LiveRelay]]:
    """A real ``turn-check`` process holding a long-poll at a live relay."""
    with live_relay(tmp_path / "relay.sqlite3") as relay:
        new_identity("me")
        assert run("id", "relay", "me", relay.url).exit_code == 0
        me = KeyStore(keys_dir()).load("me").did
        proc = subprocess.Popen([sys.executable, "-c", _CTRL_C_DEFAULT, "-m", "muretai_cli",
                                 "op", "--as", "me",
                                 "turn-check", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**os.environ})
        try:
            # until the listener has claimed its epoch: it is waiting
            wait_until(lambda: relay.relay.store.epoch(me) is not None or proc.poll() is not None,
                       "the listener has claimed its epoch", timeout=30)
            assert proc.poll() is None, proc.communicate()
            assert relay.relay.store.epoch(me) is not None
            yield proc, relay
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _interrupt(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=30)


def test_ctrl_c_while_turn_check_waits_is_exit_130_and_one_json_document(
        tmp_path: Path) -> None:
    with _waiting_turn_check(tmp_path, "--wait", "25", "--json") as (proc, _):
        out, err = _interrupt(proc)
    assert proc.returncode == 130, (out, err)
    doc = json.loads(out)
    assert next(iter(doc)) == "ok" and doc["ok"] is False and doc["error"] == "interrupted"
    assert "Traceback" not in err and "Aborted" not in err


def test_ctrl_c_in_text_mode_is_exit_130_and_says_interrupted(tmp_path: Path) -> None:
    with _waiting_turn_check(tmp_path, "--wait", "25") as (proc, _):
        out, err = _interrupt(proc)
    assert proc.returncode == 130, (out, err)
    assert out == "" and err.startswith("error: interrupted: ")


def test_ctrl_c_ends_a_follow_with_a_last_json_line_and_exit_130(tmp_path: Path) -> None:
    with _waiting_turn_check(tmp_path, "--follow", "--json") as (proc, _):
        out, err = _interrupt(proc)
    assert proc.returncode == 130, (out, err)
    last = json.loads(out.splitlines()[-1])
    assert next(iter(last)) == "ok" and last["error"] == "interrupted"


@pytest.fixture
def silent_relay() -> Iterator[str]:
    """A relay address that takes connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_turn_check_s_deadline_hint_names_no_option_it_lacks(
        silent_relay: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from muretai_cli.net import _deadline

    made = _deadline.Deadline.__init__

    def short(self: Any, seconds: float, **kw: Any) -> None:
        made(self, min(seconds, 0.3), **kw)  # the listen's own deadline, made short

    monkeypatch.setattr(_deadline.Deadline, "__init__", short)
    new_identity("me")
    assert run("id", "relay", "me", silent_relay).exit_code == 0
    result = run("op", "--as", "me", "turn-check")
    assert result.exit_code == 5, result.stderr
    assert "error: deadline: " in result.stderr
    assert "--timeout" not in result.stderr
    assert "hint: the relay did not answer in time" in result.stderr
    assert "`muretai doctor --as me`" in result.stderr
    help_text = run("op", "turn-check", "--help").stdout
    assert "--timeout" not in help_text  # so the hint must not name it


def test_join_on_a_used_up_invite_says_its_reason_and_remedy_in_text() -> None:
    new_identity("jo")
    new_identity("kim")
    with live_door("quarantine", name="ines") as door:
        result = run("invite", "create", "--as", "ines", "--url", door.base, "--json")
        text = json.loads(result.stdout)["text"]
        assert run("join", text, "--as", "jo").exit_code == 0
        result = run("join", text, "--as", "kim")
        assert result.exit_code == 4
        assert "(reason: invite-used-up)" in result.stderr
        assert "hint: the invite has no uses left: ask the inviter for a new invite" \
            in result.stderr
        result = run("join", text, "--as", "kim", "--json")
        doc = json.loads(result.stdout)
        assert doc["reason"] == "invite-used-up"
        assert doc["rpcError"]["data"]["reason"] == "invite-used-up"
        assert doc["hint"].startswith("the invite has no uses left")


def test_a_relay_s_refusal_says_its_code_and_remedy_in_text(tmp_path: Path) -> None:
    from muretai_cli.cli._visitout import client_for
    from muretai_cli.seam import sign_card_envelope
    from muretai_cli.visit.relay import RelayClient

    with live_relay(tmp_path / "relay.sqlite3") as relay:
        new_identity("me")
        assert run("id", "relay", "me", relay.url).exit_code == 0
        key = KeyStore(keys_dir()).load("me").signing_key()
        card = {"did": key.did, "name": "me", "url": "", "relay": relay.url,
                "enc_pub": key.enc_pub}
        # a card signed a minute ahead is held; the one `card publish` signs now is older
        RelayClient(relay.url, client_for).publish(
            sign_card_envelope(key, card, int(time.time()) + 60))
        result = run("card", "publish", "--as", "me")
        assert result.exit_code == 4
        assert "error: stale-card: the relay answered a card with HTTP 409" in result.stderr
        assert "hint: the relay holds a card for this DID as new as this one or newer" \
            in result.stderr
