"""``serve --on-message CMD``: a real door under uvicorn answers through small scripts.

Each test names the rule it guards; removing that rule from ``door/respond.py`` (or from
``Door.answered``) turns it red.
"""

from __future__ import annotations

import functools
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.artifacts.message import envelope_of
from muretai_cli.door.respond import MAX_OUTPUT, OnMessage
from muretai_cli.errors import InputError
from muretai_cli.seam import SigningKey, signing_payload, six_fields, verify_signature
from tests.cli_helpers import new_identity, run
from tests.door_helpers import Live, live_door, send_request
from tests.servers import ROOT, running, start_serve, wait_until

RECEIPT = "accepted: delivered to door's inbox"


def _cmd(tmp: Path, body: str) -> str:
    """A CMD line running ``body`` as a Python script (stdin: the message as JSON)."""
    script = tmp / f"cmd{time.monotonic_ns()}.py"
    script.write_text("import json, os, sys, time\n" + body)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


@pytest.fixture
def events() -> list[dict[str, Any]]:
    return []


def _door(cmd: str, events: list[dict[str, Any]], *, timeout: float = 5.0,
          policy: str = "open") -> Any:
    return live_door(policy, on_message=OnMessage(cmd, timeout=timeout),
                     on_event=events.append)


def _reply(door: Live, sender: SigningKey, text: str = "hello",
           request: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """POST a signed message (or ``request``, as it is); the reply's verified six fields and
    its metadata."""
    doc = door.rpc(request or send_request(sender, door.did, text))
    assert doc["_status"] == 200 and "result" in doc, doc
    env = envelope_of(doc["result"])
    fields = six_fields(env)
    verify_signature(door.did, signing_payload(fields), env["sig"])  # signed by the door
    assert fields["to"] == sender.did and env["replyTo"] is not None
    return fields, doc["result"].get("metadata", {})


def _answered(events: list[dict[str, Any]]) -> dict[str, Any]:
    found = [e for e in events if e["event"] == "answered"]
    assert len(found) == 1, events
    return found[0]


def test_cmd_output_is_the_signed_reply_and_a_repeat_gets_it_again(
        tmp_path: Path, events: list[dict[str, Any]]) -> None:
    runs = tmp_path / "runs"
    cmd = _cmd(tmp_path, f"""
msg = json.load(sys.stdin)
with open({str(runs)!r}, "a") as f:
    f.write(json.dumps({{"argv": sys.argv, "msg": msg}}) + "\\n")
print("you said: " + msg["text"])
""")
    sender = SigningKey.generate()
    with _door(cmd, events) as door:
        request = send_request(sender, door.did, "hello; $(touch pwned)", mid="m-1")
        fields, _ = _reply(door, sender, request=request)
        assert fields["text"] == "you said: hello; $(touch pwned)"
        assert _answered(events)["by"] == "on-message"
        again, meta = _reply(door, sender, request=request)
    lines = [json.loads(line) for line in runs.read_text().splitlines()]
    assert len(lines) == 1, "an exact repeat is answered from the kept reply, not run again"
    assert again["text"] == fields["text"] and meta.get("recovered") is True
    seen = lines[0]
    assert seen["argv"][1:] == [], "nothing of the peer's reaches CMD's command line"
    msg = seen["msg"]
    assert (msg["from"], msg["to"], msg["messageId"]) == (sender.did, door.did, "m-1")
    assert msg["text"] == "hello; $(touch pwned)" and msg["sig"]
    assert not (tmp_path / "pwned").exists() and not (ROOT / "pwned").exists()


def test_a_held_message_never_reaches_cmd(tmp_path: Path, events: list[dict[str, Any]]) -> None:
    ran = tmp_path / "ran"
    cmd = _cmd(tmp_path, f"open({str(ran)!r}, 'w').write('x')\nprint('answer')\n")
    with _door(cmd, events, policy="quarantine") as door:
        doc = door.rpc(send_request(SigningKey.generate(), door.did))
    assert doc["error"]["code"] == -32014, doc
    assert not ran.exists() and not [e for e in events if e["event"] == "answered"]


@pytest.mark.parametrize(("body", "code"), [
    ("print('half an answer')\nsys.exit(3)\n", "exit-status"),
    ("sys.stdout.buffer.write(b'caf\\xe9')\n", "not-text"),
])
def test_a_failing_cmd_leaves_the_receipt_and_a_warning(
        tmp_path: Path, events: list[dict[str, Any]], body: str, code: str) -> None:
    with _door(_cmd(tmp_path, body), events) as door:
        fields, _ = _reply(door, SigningKey.generate())
        store = door.store()
        try:
            kept = [m["text"] for m in store.inbox(None)]
        finally:
            store.close()
    assert fields["text"] == RECEIPT
    assert kept == ["hello"], "the message was delivered before CMD ran, whatever CMD did"
    answered = _answered(events)
    assert answered["by"] == "receipt" and answered["warning"]["code"] == code


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"  # a zombie runs nothing


def test_a_slow_cmd_is_killed_at_its_deadline_with_its_children(
        tmp_path: Path, events: list[dict[str, Any]]) -> None:
    pids = tmp_path / "pids"
    cmd = _cmd(tmp_path, f"""
import subprocess
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
time.sleep(60)
print("too late")
""")
    with _door(cmd, events, timeout=1.0) as door:
        fields, _ = _reply(door, SigningKey.generate())  # httpx gives up after 10 s
        assert fields["text"] == RECEIPT
        assert _answered(events)["warning"]["code"] == "timeout"
        for pid in map(int, pids.read_text().split()):
            wait_until(functools.partial(_gone, pid), f"process {pid} is gone")


def test_output_past_the_cap_is_the_receipt_without_waiting_for_the_end(
        tmp_path: Path, events: list[dict[str, Any]]) -> None:
    cmd = _cmd(tmp_path, f"""
sys.stdout.write("x" * {MAX_OUTPUT + 1})
sys.stdout.flush()
time.sleep(60)
""")
    with _door(cmd, events, timeout=8.0) as door:
        started = time.monotonic()
        fields, _ = _reply(door, SigningKey.generate())
        took = time.monotonic() - started
    assert fields["text"] == RECEIPT
    assert _answered(events)["warning"]["code"] == "too-large"
    assert took < 8, "cut off when the cap was passed, not at the deadline"


def test_output_at_the_cap_is_the_reply(tmp_path: Path, events: list[dict[str, Any]]) -> None:
    cmd = _cmd(tmp_path, f'sys.stdout.write("y" * {MAX_OUTPUT})\n')
    with _door(cmd, events) as door:
        fields, _ = _reply(door, SigningKey.generate())
    assert fields["text"] == "y" * MAX_OUTPUT


def test_control_characters_in_the_output_are_shown_as_question_marks(
        tmp_path: Path, events: list[dict[str, Any]]) -> None:
    cmd = _cmd(tmp_path, r'''sys.stdout.write("\x1b[31mred\x07\r\n\ttwo\x00\u009b{}\n")''')
    with _door(cmd, events) as door:
        fields, _ = _reply(door, SigningKey.generate())
    assert fields["text"] == "?[31mred?\n\ttwo??{}", "text only: never parsed, controls gone"


def test_cmd_that_cannot_be_run_is_refused_at_start() -> None:
    with pytest.raises(InputError) as info:
        OnMessage("/nonexistent/answer --x")
    assert info.value.code == "bad-on-message"
    with pytest.raises(InputError):
        OnMessage("'unclosed")
    new_identity("door")
    result = run("serve", "--as", "door", "--url", "http://127.0.0.1:1", "--on-message",
                 "/nonexistent/answer")
    assert result.exit_code == 2 and "bad-on-message" in result.stderr


def test_serve_on_message_end_to_end(tmp_path: Path) -> None:
    new_identity("door")
    cmd = _cmd(tmp_path, 'print("served: " + json.load(sys.stdin)["text"])\n')
    out = tmp_path / "events.jsonl"
    with running(start_serve(tmp_path, "door", "--dm-policy", "open", "--json",
                             "--on-message", cmd, "--on-message-timeout", "1.5s",
                             stdout=out)) as served:
        did = json.loads(out.read_text().splitlines()[0])["did"]
        sender = SigningKey.generate()
        doc = served.rpc(send_request(sender, did, "hi there"))
        assert six_fields(envelope_of(doc["result"]))["text"] == "served: hi there"
        wait_until(lambda: '"answered"' in out.read_text(), "the answered event is printed")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    answered = [e for e in lines if e["event"] == "answered"]
    assert answered and answered[0]["ok"] is True and answered[0]["by"] == "on-message"
    log = served.log.read_text()
    assert "answered" in log and "by on-message" in log


def test_on_a_postgresql_door_the_reply_is_made_and_kept_off_the_loop(
        tmp_path: Path, events: list[dict[str, Any]], pg_url: str) -> None:
    """A PostgreSQL door answers on its thread pool: CMD's reply is signed and kept there."""
    cmd = _cmd(tmp_path, 'print("pg: " + json.load(sys.stdin)["text"])\n')
    sender = SigningKey.generate()
    with live_door("open", db=pg_url, on_message=OnMessage(cmd), on_event=events.append) as door:
        assert door.door.offload is not None
        request = send_request(sender, door.did, "hi")
        fields, _ = _reply(door, sender, request=request)
        again, meta = _reply(door, sender, request=request)
    assert fields["text"] == again["text"] == "pg: hi" and meta.get("recovered") is True


def test_answer_never_raises(tmp_path: Path) -> None:
    import asyncio

    responder = OnMessage(_cmd(tmp_path, "print('x')\n"))
    outcome = asyncio.run(responder.answer({"text": "\ud800"}))  # UTF-8 cannot carry it
    assert (outcome.text, outcome.code) == (None, "cannot-run")
