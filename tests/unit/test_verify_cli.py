"""`muretai sign` / `verify message` / `verify card` / `conformance`: verdicts, codes, batches."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.seam import SigningKey, sign_card_envelope
from tests.cli_helpers import new_identity, run, run_json
from tests.repo_files import vector_file


@pytest.fixture
def pair() -> tuple[str, str]:
    return new_identity("alice"), new_identity("bob")


def _signed(to: str, text: str = "hello", *extra: str) -> str:
    result = run("sign", "message", "--as", "alice", "--to", to, text, *extra)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_sign_then_verify_message(pair: tuple[str, str], tmp_path: Path) -> None:
    alice, bob = pair
    path = tmp_path / "m.json"
    path.write_text(_signed(bob))
    code, doc = run_json("verify", "message", str(path), "--to", bob)
    assert code == 0 and doc["ok"] is True
    assert doc["results"][0]["from"] == alice
    assert doc["results"][0]["text"] == "hello"


def test_sign_output_is_a_message_send_request(pair: tuple[str, str]) -> None:
    _, bob = pair
    req = json.loads(_signed(bob, "hi"))
    assert req["method"] == "message/send"
    meta = req["params"]["message"]["metadata"]
    assert set(meta) == {"from", "to", "timestamp", "sig"}
    assert isinstance(meta["timestamp"], int)


def test_wrong_recipient_is_refused(pair: tuple[str, str], tmp_path: Path) -> None:
    alice, bob = pair
    path = tmp_path / "m.json"
    path.write_text(_signed(bob))
    code, doc = run_json("verify", "message", str(path), "--to", alice)
    assert code == 1
    assert doc["results"][0]["reasons"][0]["code"] == "wrong-recipient"


def test_tampered_text_is_refused(pair: tuple[str, str]) -> None:
    _, bob = pair
    tampered = _signed(bob, "pay 10").replace("pay 10", "pay 99")
    code, doc = run_json("verify", "message", "-", "--to", bob, input=tampered)
    assert code == 1
    assert doc["results"][0]["reasons"][0]["code"] == "bad-signature"


@pytest.mark.parametrize(("offset", "code"), [(-301, "stale"), (301, "from-the-future")])
def test_freshness_both_directions(pair: tuple[str, str], offset: int, code: str) -> None:
    _, bob = pair
    now = int(time.time())
    signed = _signed(bob, "x", "--now", str(now + offset))
    exit_code, doc = run_json("verify", "message", "-", "--to", bob, "--now", str(now),
                              input=signed)
    assert exit_code == 1
    assert doc["results"][0]["reasons"][0]["code"] == code
    ok_code, _ = run_json("verify", "message", "-", "--to", bob, "--now", str(now),
                          "--window", str(abs(offset) + 1), input=signed)
    assert ok_code == 0


def test_an_integral_float_signed_as_an_int_cannot_be_verified(pair: tuple[str, str]) -> None:
    _, bob = pair
    req = json.loads(_signed(bob))
    req["params"]["message"]["metadata"]["timestamp"] += 0.0
    code, doc = run_json("verify", "message", "-", "--to", bob, input=json.dumps(req))
    assert code == 1
    assert doc["results"][0]["reasons"][0]["code"] == "cannot-verify"


def test_non_text_part_is_refused(pair: tuple[str, str]) -> None:
    _, bob = pair
    req = json.loads(_signed(bob))
    req["params"]["message"]["parts"].append({"kind": "file", "file": {"uri": "x"}})
    code, doc = run_json("verify", "message", "-", "--to", bob, input=json.dumps(req))
    assert code == 1
    assert doc["results"][0]["reasons"][0]["code"] == "non-text-part"


def test_bare_message_is_accepted(pair: tuple[str, str]) -> None:
    _, bob = pair
    bare = json.loads(_signed(bob))["params"]["message"]
    code, _ = run_json("verify", "message", "-", "--to", bob, input=json.dumps(bare))
    assert code == 0


def test_batch_reports_each_and_exits_with_the_worst(pair: tuple[str, str],
                                                     tmp_path: Path) -> None:
    _, bob = pair
    good = tmp_path / "good.json"
    good.write_text(_signed(bob))
    bad = tmp_path / "bad.json"
    bad.write_text(_signed(bob, "a").replace('"a"', '"b"'))
    code, doc = run_json("verify", "message", str(good), str(bad), "--to", bob)
    assert code == 1
    assert [r["ok"] for r in doc["results"]] == [True, False]
    code, doc = run_json("verify", "message", str(good), str(tmp_path / "missing"), "--to", bob)
    assert code == 2
    assert doc["results"][1]["reasons"][0]["code"] == "no-such-file"


def test_jsonl_on_stdin_is_many_inputs(pair: tuple[str, str]) -> None:
    _, bob = pair
    lines = "".join(_signed(bob, f"n{i}") for i in range(5))
    code, doc = run_json("verify", "message", "-", "--to", bob, input=lines + "garbage\n")
    assert code == 2
    assert [r["ok"] for r in doc["results"]] == [True] * 5 + [False]
    assert doc["results"][5]["reasons"][0]["code"] == "invalid-json"


@pytest.mark.parametrize("payload", [b"", b"\x00\x01\xff" * 50, b"{" * 100000, b"[1,2",
                                     b"\xef\xbb\xbf{}", ("x" * 2_000_000).encode()])
def test_garbage_is_a_clean_error(pair: tuple[str, str], tmp_path: Path, payload: bytes) -> None:
    _, bob = pair
    path = tmp_path / "junk"
    path.write_bytes(payload)
    result = run("verify", "message", str(path), "--to", bob)
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout.startswith("FAIL")


def test_huge_did_is_a_usage_error_fast(pair: tuple[str, str], tmp_path: Path,
                                        b58_decoded: list[int]) -> None:
    _, bob = pair
    path = tmp_path / "m.json"
    path.write_text(_signed(bob))
    result = run("verify", "message", str(path), "--to", "did:key:z" + "2" * 100_000)
    assert result.exit_code == 2
    assert max(b58_decoded, default=0) <= 512, "refused by its length, before decoding"


def test_sign_card_and_verify(pair: tuple[str, str], tmp_path: Path) -> None:
    alice, bob = pair
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"name": "A", "url": "https://a.example/support/"}))
    signed = run("sign", "card", "--as", "alice", str(card))
    assert signed.exit_code == 0
    env = json.loads(signed.stdout)
    assert env["card"]["did"] == alice and env["typ"] == "agentcard" and env["v"] == 1
    code, _ = run_json("verify", "card", "-", "--did", alice, input=signed.stdout)
    assert code == 0
    code, doc = run_json("verify", "card", "-", "--did", alice, "--origin",
                         "https://A.example:443/support", input=signed.stdout)
    assert code == 0
    code, doc = run_json("verify", "card", "-", "--did", alice, "--origin",
                         "https://a.example/sales", input=signed.stdout)
    assert code == 1 and doc["results"][0]["reasons"][0]["code"] == "wrong-origin"
    code, doc = run_json("verify", "card", "-", "--did", bob, input=signed.stdout)
    assert code == 1 and doc["results"][0]["reasons"][0]["code"] == "did-mismatch"


def test_sign_card_refuses_another_did(pair: tuple[str, str], tmp_path: Path) -> None:
    _, bob = pair
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"name": "A", "did": bob}))
    result = run("sign", "card", "--as", "alice", str(card))
    assert result.exit_code == 1
    assert "did-mismatch" in result.stderr


def test_card_ts_rules() -> None:
    key = SigningKey(bytes(range(32)))
    now = 1_800_000_000
    future = sign_card_envelope(key, {"name": "x"}, now + 301)
    code, doc = run_json("verify", "card", "-", "--did", key.did, "--now", str(now),
                         input=json.dumps(future))
    assert code == 1 and doc["results"][0]["reasons"][0]["code"] == "envelope-from-the-future"
    old = sign_card_envelope(key, {"name": "x"}, now - 6 * 3600 - 1)
    code, doc = run_json("verify", "card", "-", "--did", key.did, "--now", str(now),
                         input=json.dumps(old))
    assert code == 0, "a stale envelope is a warning, not a refusal"
    reason = doc["results"][0]["reasons"][0]
    assert (reason["code"], reason["severity"]) == ("stale-envelope", "warning")
    assert "21601 s ago" in reason["message"], "the warning names how old the envelope is"
    assert reason["detail"] == reason["message"], "detail: the old name, kept one release"
    floaty = dict(sign_card_envelope(key, {"name": "x"}, now))
    floaty["ts"] = float(now)
    code, doc = run_json("verify", "card", "-", "--did", key.did, "--now", str(now),
                         input=json.dumps(floaty))
    assert code == 1 and doc["results"][0]["reasons"][0]["code"] == "float-in-payload"


def test_conformance_on_the_vectors() -> None:
    path = vector_file("wire_vectors.json")
    code, doc = run_json("conformance", str(path))
    assert code == 0
    status = {g["group"]: g["status"] for g in doc["groups"]}
    for group in ("canonical", "did", "envelope", "cardpub", "reject.message",
                  "reject.encoding", "numberHazards", "cryptobox", "relay", "binding",
                  "bindingV2", "ownerState", "invite", "reject.invite", "reject.claim",
                  "reject.keystate"):
        assert status[group] == "passed", group
    # the golden file predates agent-seam's reject.did and reject.cardpub: missing, by name
    skipped = {g["group"]: g["reason"] for g in doc["groups"] if g["status"] == "skipped"}
    assert set(skipped) <= {"reject.did", "reject.cardpub"}, skipped
    assert all(r.startswith("missing from the file") for r in skipped.values()), skipped
    assert status["webBotAuth"] == "passed"
    assert status["domainLinkage"] == "passed"


def test_conformance_fails_a_wrong_vector(tmp_path: Path) -> None:
    doc = {"canonical": [{"name": "lie", "payload": {"b": 1, "a": 2},
                          "canonical": '{"b":1,"a":2}'}],
           "reject": {"message": [{"name": "valid-message-claimed-bad",
                                   "input": _valid_envelope(), "mustReject": True}]},
           "mystery": [1, 2]}
    path = tmp_path / "v.json"
    path.write_text(json.dumps(doc))
    code, out = run_json("conformance", str(path))
    assert code == 1
    status = {g["group"]: g["status"] for g in out["groups"]}
    assert status == {"canonical": "failed", "reject.message": "failed", "mystery": "skipped"}


def _valid_envelope() -> dict[str, object]:
    from muretai_cli.seam import sign_envelope

    key = SigningKey(bytes(32))
    return sign_envelope(key, to=key.did, text="t", timestamp=1)


@pytest.mark.parametrize("part", [
    {"type": "file", "text": "hello", "file": {"uri": "https://evil.example/x"}},
    {"kind": "text", "text": "hello", "file": {"uri": "https://evil.example/x"}},
    {"kind": "text", "text": "hello", "data": {"pay": "attacker"}},
    {"kind": "text", "text": "hello", "metadata": {"note": "unsigned"}},
    {"text": "hello"},
])
def test_a_text_part_carrying_anything_unsigned_is_refused(pair: tuple[str, str],
                                                            part: dict[str, object]) -> None:
    _, bob = pair
    req = json.loads(_signed(bob, "hello"))
    req["params"]["message"]["parts"] = [part]
    code, doc = run_json("verify", "message", "-", "--to", bob, input=json.dumps(req))
    assert code == 1
    assert doc["results"][0]["reasons"][0]["code"] == "non-text-part"


def _box_group(ad_hex: str | None = "", must_not_open_ad: str = "01",
               must_not_open: bool = True) -> dict[str, object]:
    """A cryptobox group sealed here; each argument breaks it one way."""
    from muretai_cli.seam import seal_box

    me, sender = SigningKey(bytes([9]) * 32), SigningKey(bytes([3]) * 32)
    blob = seal_box(sender, me.enc_pub, b"hi", ad=b"")
    case: dict[str, object] = {"name": "c", "blob": blob, "plaintextHex": "6869"}
    if ad_hex is not None:
        case["adHex"] = ad_hex
    refuse = [{"name": "m", "blob": blob, "adHex": must_not_open_ad}] if must_not_open else []
    return {"recipientSeed": "09" * 32, "senderSeed": "03" * 32, "recipientEncPub": me.enc_pub,
            "senderEncPub": sender.enc_pub, "open": [case], "mustNotOpen": refuse}


def test_conformance_passes_an_honest_cryptobox_group(tmp_path: Path) -> None:
    path = tmp_path / "v.json"
    path.write_text(json.dumps({"cryptobox": _box_group()}))
    code, out = run_json("conformance", str(path))
    assert code == 0 and out["groups"][0]["status"] == "passed"


@pytest.mark.parametrize(("doc", "group"), [
    ({"reject": {"message": "x"}}, "reject.message"),
    ({"canonical": [{"name": "a", "payload": 1, "canonical": 1}]}, "canonical"),
    ({"canonical": "garbage"}, "canonical"),
    ({"canonical": []}, "canonical"),
    ({"reject": {"encoding": {"reject": ["zz"]}}}, "reject.encoding"),
    ({"reject": "nope"}, "reject"),
    ({"cryptobox": _box_group(ad_hex=None)}, "cryptobox"),
    ({"cryptobox": _box_group(must_not_open_ad="")}, "cryptobox"),
    ({"cryptobox": _box_group(must_not_open=False)}, "cryptobox"),
    ({"relay": {"send": [], "listen": "x"}}, "relay"),
])
def test_conformance_on_a_malformed_file_fails_the_group_by_name(
        tmp_path: Path, doc: dict[str, object], group: str) -> None:
    path = tmp_path / "v.json"
    path.write_text(json.dumps(doc))
    result = run("conformance", str(path), "--json")
    assert result.exit_code == 1
    assert "Traceback" not in result.stdout + result.stderr
    status = {g["group"]: g["status"] for g in json.loads(result.stdout)["groups"]}
    assert status[group] == "failed"


def test_a_malformed_expected_did_is_a_usage_error_in_both_commands(
        pair: tuple[str, str], tmp_path: Path) -> None:
    _, bob = pair
    path = tmp_path / "m.json"
    path.write_text(_signed(bob))
    for args in (["verify", "message", str(path), "--to", "x"],
                 ["verify", "card", str(path), "--did", "x"]):
        result = run(*args)
        assert result.exit_code == 2 and "bad-did" in result.stderr, args


def test_a_negative_window_is_a_usage_error(pair: tuple[str, str], tmp_path: Path) -> None:
    _, bob = pair
    path = tmp_path / "m.json"
    path.write_text(_signed(bob))
    assert run("verify", "message", str(path), "--to", bob, "--window", "-5").exit_code == 2


def test_a_message_without_metadata_names_the_missing_fields(pair: tuple[str, str]) -> None:
    _, bob = pair
    req = json.loads(_signed(bob))
    del req["params"]["message"]["metadata"]
    code, doc = run_json("verify", "message", "-", "--to", bob, input=json.dumps(req))
    reason = doc["results"][0]["reasons"][0]
    assert code == 1 and reason["code"] == "missing-field"
    assert "from, timestamp, to" in reason["detail"]


def test_json_output_escapes_terminal_controls_from_peers(pair: tuple[str, str]) -> None:
    _, bob = pair
    hostile = "pay\u202egnp.exe \x9b31m now"
    result = run("verify", "message", "-", "--to", bob, "--json", input=_signed(bob, hostile))
    assert "\u202e" not in result.stdout and "\x9b" not in result.stdout
    assert "\\u202e" in result.stdout and "\\u009b" in result.stdout
    assert json.loads(result.stdout)["results"][0]["text"] == hostile


def test_verify_card_without_a_url_does_not_say_none() -> None:
    key = SigningKey(bytes(range(32)))
    now = 1_800_000_000
    env = sign_card_envelope(key, {"name": "x"}, now)
    result = run("verify", "card", "-", "--did", key.did, "--now", str(now),
                 input=json.dumps(env))
    assert result.exit_code == 0, result.output
    assert "None" not in result.stdout and "(the card names no url)" in result.stdout


# --- issue 13 §4: what the signature does not cover -----------------------------------------

def _unsigned_change(req: dict[str, object], change: str) -> None:
    message = req["params"]["message"]  # type: ignore[index]
    if change == "role-agent":
        message["role"] = "agent"
    elif change == "role-missing":
        del message["role"]
    elif change == "kind-missing":
        del message["kind"]
    elif change == "jsonrpc-1.0":
        req["jsonrpc"] = "1.0"
    elif change == "another-method":
        req["method"] = "tasks/get"


@pytest.mark.parametrize(("change", "code"), [
    ("role-agent", "role-not-user"),
    ("role-missing", "role-not-user"),
    ("kind-missing", "not-a2a-message"),
    ("jsonrpc-1.0", "not-jsonrpc-2.0"),
    ("another-method", "unknown-method"),
])
def test_what_a_door_refuses_for_its_shape_is_not_verified_offline(
        pair: tuple[str, str], change: str, code: str) -> None:
    _, bob = pair
    req = json.loads(_signed(bob))
    _unsigned_change(req, change)
    exit_code, doc = run_json("verify", "message", "-", "--to", bob, input=json.dumps(req))
    assert exit_code == 1 and [r["code"] for r in doc["results"][0]["reasons"]] == [code]
    # the same door rung judges a bare message
    if change.startswith(("role", "kind")):
        bare = json.dumps(req["params"]["message"])
        exit_code, doc = run_json("verify", "message", "-", "--to", bob, input=bare)
        assert exit_code == 1 and doc["results"][0]["reasons"][0]["code"] == code


def test_the_shape_rung_is_the_doors_own(monkeypatch: pytest.MonkeyPatch,
                                         pair: tuple[str, str]) -> None:
    # offline verify calls the ladder's function, not a copy of it
    from muretai_cli.inbox import ladder

    _, bob = pair
    calls: list[object] = []
    real = ladder.a2a_message

    def counted(params: Any) -> Any:
        calls.append(1)
        return real(params)

    monkeypatch.setattr(ladder, "a2a_message", counted)
    assert run_json("verify", "message", "-", "--to", bob, input=_signed(bob))[0] == 0
    assert calls == [1]


def test_unsigned_parts_a_reader_might_act_on_are_named_in_warnings(
        pair: tuple[str, str]) -> None:
    _, bob = pair
    req = json.loads(_signed(bob))
    clean = json.dumps(req)
    message = req["params"]["message"]
    message["taskId"] = "task-7"
    message["referenceTaskIds"] = ["task-1", "task-2"]
    message["metadata"]["replyTo"] = "m-forged"
    req["params"]["configuration"] = {"pushNotificationConfig": {"url": "https://evil.example/h"}}
    code, doc = run_json("verify", "message", "-", "--to", bob, input=json.dumps(req))
    result = doc["results"][0]
    assert code == 0 and result["ok"] is True
    warnings = {r["code"]: r["message"] for r in result["reasons"]}
    assert {r["severity"] for r in result["reasons"]} == {"warning"}
    assert set(warnings) == {"unsigned-task-id", "unsigned-reference-task-ids",
                             "unsigned-reply-to", "unsigned-push-url"}
    assert warnings["unsigned-task-id"].startswith('params.message.taskId = "task-7" is not '
                                                   "signed")
    assert '"https://evil.example/h"' in warnings["unsigned-push-url"]
    assert "params.message.metadata.replyTo" in warnings["unsigned-reply-to"]
    text = run("verify", "message", "-", "--to", bob, input=json.dumps(req))
    assert text.exit_code == 0 and text.stdout.startswith("ok ")
    assert "warning: stdin:1: unsigned-push-url: params.configuration.pushNotificationConfig" \
        in text.stderr
    assert text.stderr.count("is not signed") == 4
    # a request with none of them has no warning
    code, doc = run_json("verify", "message", "-", "--to", bob, input=clean)
    assert code == 0 and doc["results"][0]["reasons"] == []


# --- issue 13 §6: verify streams its report --------------------------------------------------

class _Item(dict):  # type: ignore[type-arg]
    """A batch item that a weak reference can watch."""


@pytest.mark.parametrize("fmt", ["json", "text", "junit"])
def test_a_batch_holds_no_item_it_has_already_reported(
        fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    import weakref

    from muretai_cli.cli._batch import render_batch, result_of

    refs: list[weakref.ref[_Item]] = []

    def items() -> Any:
        for i in range(40):
            item = _Item(result_of(f"in{i}", [], 0, text="x" * 1000))
            refs.append(weakref.ref(item))
            if i >= 2:
                assert refs[i - 2]() is None, f"item {i - 2} is still held"
            yield item

    code = render_batch(items(), fmt == "json", fmt=fmt, suite="s")
    out = capsys.readouterr().out
    assert code == 0 and len(refs) == 40
    if fmt == "json":
        assert [r["input"] for r in json.loads(out)["results"]] == [f"in{i}" for i in range(40)]
    elif fmt == "text":
        assert out.splitlines() == [f"ok    in{i}" for i in range(40)]
    else:
        assert out.count("<testcase ") == 40 and 'name="in39"' in out


def test_the_streamed_json_report_is_the_document_emit_json_writes(
        pair: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    from muretai_cli.cli._json import emit_json

    _, bob = pair
    warned = json.loads(_signed(bob, "w\u202eu\U000e0041"))
    warned["params"]["message"]["taskId"] = "t\u2028\x9b"
    lines = _signed(bob, "a") + json.dumps(warned) + "\n" + "garbage\n" + \
        _signed(bob, "b").replace('"b"', '"c"')
    result = run("verify", "message", "-", "--to", bob, "--json", input=lines)
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert [r["ok"] for r in doc["results"]] == [True, True, False, False]
    capsys.readouterr()
    emit_json(doc)
    assert result.stdout == capsys.readouterr().out
