"""The README's first command: the demo runs the main job end to end and every step holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # real processes started (and killed): seconds each

DEMO = [sys.executable, "-m", "muretai_cli", "demo"]


def _running_in(home: Path) -> list[str]:
    """The command lines of live processes whose MURETAI_HOME is ``home`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            if f"MURETAI_HOME={home}".encode() in environ:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


@pytest.mark.longest
def test_demo_passes_end_to_end(tmp_path: Path) -> None:
    env = {**os.environ, "MURETAI_HOME": str(tmp_path / "unused"), "NO_COLOR": "1"}
    pg = os.environ.get("MURETAI_TEST_PG")  # ./dev demo passes one when PostgreSQL is here
    proc = subprocess.run([*DEMO, "--home", str(tmp_path / "demo"), *(["--pg", pg] if pg else [])],
                          capture_output=True, text=True, env=env, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "demo passed" in proc.stdout
    if pg:  # one door as two processes on one database: both messages in its one inbox
        assert "--workers 2" in proc.stdout
        assert '2 messages, verified, in one inbox: ["And on Monday morning?", ' \
               '"Is the desk open on Sunday?"]' in proc.stdout
    assert _running_in(tmp_path / "demo") == [], "the demo left processes running"
    assert "held for approval at http://127.0.0.1:" in proc.stdout, "the first contact was held"
    assert proc.stdout.count("UNEXPECTED") == 0
    # The shop's inbox itself (not the demo's echo of its own commands): the held first DM,
    # approved, and the two later DMs, each from alice and verified.
    env["MURETAI_HOME"] = str(tmp_path / "demo")
    inbox = subprocess.run([sys.executable, "-m", "muretai_cli", "op", "--as", "shop", "inbox",
                            "--json"], capture_output=True, text=True, env=env, check=False)
    alice = subprocess.run([sys.executable, "-m", "muretai_cli", "id", "show", "alice",
                            "--json"], capture_output=True, text=True, env=env, check=False)
    dave = subprocess.run([sys.executable, "-m", "muretai_cli", "id", "show", "dave",
                           "--json"], capture_output=True, text=True, env=env, check=False)
    dave_did = json.loads(dave.stdout)["did"]
    messages = json.loads(inbox.stdout)["messages"]
    received = [m for m in messages if m["direction"] == "in"]
    texts = [m["text"] for m in received if m["from"] != dave_did]
    assert sorted(texts) == sorted(["Hello from alice",
                                    "Hello, I'd like to confirm my fitting on Friday.",
                                    "See you on Friday."]), texts
    assert {m["from"] for m in received} == {json.loads(alice.stdout)["did"], dave_did}
    assert all(m["verified"] for m in received)
    # the agent part: dave's agent's first contact, held, then approved by the owner at a
    # shell after the shop's agent met the gate; the owner's answer reached dave's agent
    assert [m["text"] for m in received if m["from"] == dave_did] == [
        "Hello, do you have the blue coat in size M?"]
    assert "mcp> whoami" in proc.stdout and '"needsHumanConfirmation": true' in proc.stdout
    # The shop's owner answered through alice's relay; alice's turn-check stored it, bound
    # to the message it answers; bob and carol talked through the relay.
    def view(name: str) -> list[dict[str, object]]:
        out = subprocess.run([sys.executable, "-m", "muretai_cli", "op", "--as", name, "inbox",
                              "--json"], capture_output=True, text=True, env=env, check=False)
        rows: list[dict[str, object]] = json.loads(out.stdout)["messages"]
        return rows

    # (alice is also an introducer in the demo: carol's request and its note reach her too)
    shop = subprocess.run([sys.executable, "-m", "muretai_cli", "id", "show", "shop", "--json"],
                          capture_output=True, text=True, env=env, check=False)
    answer = [m for m in view("alice") if m["direction"] == "in"
              and m["from"] == json.loads(shop.stdout)["did"]]
    assert [(m["text"], m["channel"]) for m in answer] == [
        ("Friday 10:00 is booked. See you then!", "relay")]
    sent = {m["messageId"]: m["text"] for m in view("alice") if m["direction"] == "out"}
    assert sent[answer[0]["replyTo"]] == "See you on Friday."
    to_dave = [m for m in view("dave") if m["direction"] == "in"]
    assert [(m["text"], m["channel"]) for m in to_dave] == [
        ("Yes, one left in M. Shall I keep it for you?", "relay")]
    assert [(m["direction"], m["text"]) for m in view("bob")] == [
        ("out", "Lunch on Thursday?"), ("in", "Thursday works. 12:30?")]

    # bob and carol met through an invite before they talked: each holds the other as a
    # contact made by it, and carol's policy stayed quarantine (the invite let bob in)
    def run_json(*args: str) -> dict[str, Any]:
        out = subprocess.run([sys.executable, "-m", "muretai_cli", *args, "--json"],
                             capture_output=True, text=True, env=env, check=False)
        doc: dict[str, Any] = json.loads(out.stdout)
        return doc

    bob, carol = (run_json("id", "show", n)["did"] for n in ("bob", "carol"))
    assert [(c["did"], c["how"]) for c in run_json("invite", "contacts", "--as", "carol")[
        "contacts"]] == [(bob, "claimed-invite")]
    assert [(c["did"], c["how"]) for c in run_json("invite", "contacts", "--as", "bob")[
        "contacts"]] == [(carol, "joined-invite")]
    assert run_json("op", "--as", "carol", "policy")["policy"] == "quarantine"
    # (carol's other mail is alice's gift of an introduction: the demo's trust part)
    assert [(m["from"], m["text"]) for m in view("carol")
            if m["direction"] == "in" and m["from"] == bob] == [(bob, "Lunch on Thursday?")]
    assert "honoured the claim of" in proc.stdout


def _demo_homes(tmp: Path) -> list[str]:
    return [p.name for p in tmp.iterdir() if p.name.startswith("muretai-demo-")]


def test_demo_home_is_removed_when_the_reader_goes_away(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "NO_COLOR": "1"}
    # `muretai demo | head -n 2`: head leaves after two lines, the demo's next write fails.
    demo = subprocess.Popen(DEMO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert demo.stdout is not None and demo.stderr is not None
    for _ in range(2):
        demo.stdout.readline()
    assert _demo_homes(tmp), "the demo made its home in TMPDIR"
    demo.stdout.close()
    demo.wait(timeout=60)
    assert "Traceback" not in demo.stderr.read().decode()
    assert _demo_homes(tmp) == []


def test_demo_home_is_removed_on_sigterm(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "NO_COLOR": "1"}
    demo = subprocess.Popen(DEMO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert demo.stdout is not None
    while b"[2]" not in demo.stdout.readline():
        pass
    assert _demo_homes(tmp)
    demo.send_signal(signal.SIGTERM)
    demo.communicate(timeout=60)
    assert demo.returncode != 0
    assert _demo_homes(tmp) == []


def test_demo_json_is_a_json_line_per_step(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "NO_COLOR": "1"}
    demo = subprocess.Popen([*DEMO, "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert demo.stdout is not None
    lines = [json.loads(demo.stdout.readline()) for _ in range(2)]
    demo.send_signal(signal.SIGTERM)
    demo.communicate(timeout=60)
    assert [next(iter(line)) for line in lines] == ["ok", "ok"]
    assert [(line["event"], line["step"], line["ok"]) for line in lines] == [
        ("step", 1, True), ("step", 2, True)]
    assert lines[0]["command"] == ["muretai", "id", "new", "shop"]
    assert _demo_homes(tmp) == []
