"""``turn-check --follow --exec CMD`` (issue 18 §3): CMD runs once per message stored, the
message as JSON on stdin and never on its command line, one at a time, its process group
killed at the deadline, a failing CMD reported and never blocking the next message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.seam import SigningKey
from tests.cli_helpers import new_identity, run
from tests.relay_helpers import LiveRelay, live_relay, signed_deposit
from tests.waiting import wait_until

pytestmark = pytest.mark.slow  # real processes: seconds each

# CMD: records what it was given (argv, its own /proc cmdline, stdin) under its messageId,
# then acts on the text: "fail" exits 3, "hang" starts a grandchild in its group and hangs.
WAKE = '''
import json, os, subprocess, sys, time
out = sys.argv[1]
data = sys.stdin.read()
event = json.loads(data)
with open("/proc/self/cmdline", "rb") as f:
    cmdline = f.read().decode()
record = {"argv": sys.argv, "cmdline": cmdline, "stdin": data, "pgid": os.getpgid(0)}
if event["text"] == "hang":
    record["child"] = subprocess.Popen(["sleep", "600"]).pid
with open(os.path.join(out, event["messageId"] + ".json.tmp"), "w") as f:
    json.dump(record, f)
os.rename(os.path.join(out, event["messageId"] + ".json.tmp"),
          os.path.join(out, event["messageId"] + ".json"))
if event["text"] == "fail":
    sys.exit(3)
if event["text"] == "hang":
    time.sleep(600)
print("woke for", event["text"])
'''


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[LiveRelay]:
    with live_relay(tmp_path / "relay.sqlite3") as live:
        yield live


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_exec_runs_cmd_per_message_json_on_stdin_bounded_and_in_turn(
        relay: LiveRelay, tmp_path: Path) -> None:
    from muretai_cli.home import KeyStore, keys_dir

    new_identity("bob")
    assert run("id", "relay", "bob", relay.url).exit_code == 0
    assert run("op", "--as", "bob", "policy", "open").exit_code == 0
    bob = KeyStore(keys_dir()).load("bob").signing_key()
    alice = SigningKey.generate()
    script, out = tmp_path / "wake.py", tmp_path / "woken"
    script.write_text(WAKE)
    out.mkdir()
    ids = [signed_deposit(relay, alice, bob, text) for text in ("hang", "fail", "ok")]
    follower = subprocess.Popen(
        [sys.executable, "-m", "muretai_cli", "op", "--as", "bob", "turn-check", "--follow",
         "--json", "--exec", f"{sys.executable} {script} {out}", "--exec-timeout", "8s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    assert follower.stdout is not None
    lines: list[dict[str, Any]] = []
    try:
        while len([x for x in lines if x.get("event") == "exec"]) < 3:
            line = follower.stdout.readline()
            assert line, follower.communicate()
            lines.append(json.loads(line))
    finally:
        follower.kill()
        _, err = follower.communicate(timeout=30)
    messages = [x["messageId"] for x in lines if x.get("event") == "message"]
    assert messages == ids  # each shown once, in order
    runs = [x for x in lines if x.get("event") == "exec"]
    assert [x["messageId"] for x in runs] == ids  # one CMD at a time, in order
    hang, fail, ok = runs
    assert hang["ok"] is False and hang["error"]["code"] == "timeout"
    assert fail["ok"] is False and fail["error"]["code"] == "exit-status"
    assert ok["ok"] is True and ok["output"] == "woke for ok"  # after two failures
    assert b"--exec failed for message" in err and b"timeout" in err
    for mid, text in zip(ids, ("hang", "fail", "ok"), strict=True):
        record = json.loads((out / f"{mid}.json").read_text())
        given = json.loads(record["stdin"])
        assert given["messageId"] == mid and given["text"] == text
        assert given["verified"] is True and given["from"] == alice.did
        assert record["argv"][1:] == [str(out)]  # nothing of the message on argv
        assert mid not in record["cmdline"] and text not in record["cmdline"].split("\0")[2:]
        assert record["pgid"] != os.getpgid(0)  # a group of its own
    child = json.loads((out / f"{ids[0]}.json").read_text())["child"]
    wait_until(lambda: not _alive(child), "the deadline killed CMD's whole group", timeout=30)
