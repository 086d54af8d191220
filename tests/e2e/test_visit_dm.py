"""``op --as ME contact dm``: connect, redeem, one signed POST, and the reply's checks."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from muretai_cli.artifacts.grant import mint_grant
from muretai_cli.cli import app
from tests.hostile_site import HostileSite


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[HostileSite, str]]:
    hostile = HostileSite()
    with hostile.running() as base:
        yield hostile, base


@pytest.fixture
def me() -> str:
    out = CliRunner().invoke(app, ["id", "new", "me"])
    assert out.exit_code == 0, out.output
    return out.stdout.strip()


def dm(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, ["op", "--as", "me", "contact", "dm", *args], input=input)


def posts_to(hostile: HostileSite, name: str, since: int) -> list[str]:
    return [m for n, m in hostile.posts[since:] if n == name]


def as_json(result: Result) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(result.stdout)
    assert next(iter(doc)) == "ok"
    return doc


def test_first_contact_redeems_then_sends_once(site: tuple[HostileSite, str], me: str) -> None:
    hostile, base = site
    mark = len(hostile.posts)
    out = dm(hostile.did("good"), "hello door", "--connect", f"{base}/good", "--json")
    assert out.exit_code == 0, out.output
    doc = as_json(out)
    assert doc["redeem"] == "redeemed" and doc["reply"]["verified"] is True
    assert doc["grantId"] == hostile.grants["good"]["id"]
    assert posts_to(hostile, "good", mark) == ["contact/redeem", "message/send"]
    listed = CliRunner().invoke(app, ["op", "--as", "me", "contact", "list", "--json"])
    conns = json.loads(listed.stdout)["connections"]
    assert [c["did"] for c in conns] == [hostile.did("good")]
    assert conns[0]["endpoint"] == f"{base}/good"
    # Connected now: straight to the remembered endpoint, one POST, no card fetch, no redeem.
    mark, gets = len(hostile.posts), len(hostile.gets)
    again = dm(hostile.did("good"), "second")
    assert again.exit_code == 0, again.output
    assert "reply from" in again.stdout and "received: second" in again.stdout
    assert posts_to(hostile, "good", mark) == ["message/send"]
    assert len(hostile.gets) == gets


def test_open_door_answering_32601_is_knocked_on_directly(site: tuple[HostileSite, str],
                                                          me: str, tmp_path: Path) -> None:
    hostile, base = site
    grant = tmp_path / "grant.json"
    grant.write_text(json.dumps(mint_grant(hostile.key("open"), uses=1, now=int(time.time()))))
    mark = len(hostile.posts)
    out = dm(hostile.did("open"), "hi", "--connect", str(grant), "--card-url", f"{base}/open",
             "--json")
    assert out.exit_code == 0, out.output
    assert as_json(out)["redeem"] == "open-door"
    assert posts_to(hostile, "open", mark) == ["contact/redeem", "message/send"]


def test_card_without_grant_sends_without_redeem(site: tuple[HostileSite, str], me: str) -> None:
    hostile, base = site
    mark = len(hostile.posts)
    out = dm(hostile.did("open"), "hi", "--connect", f"{base}/open/.well-known/agent-card.json")
    assert out.exit_code == 0, out.output
    assert posts_to(hostile, "open", mark) == ["message/send"]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "code"), [("reply-forged", "reply-bad-signature"),
                                            ("reply-stale", "reply-stale"),
                                            ("reply-other", "reply-to-other"),
                                            ("reply-unsigned", "reply-unsigned"),
                                            ("reply-none", "no-reply"),
                                            ("reply-garbage", "no-reply"),
                                            ("reply-misdirected", "reply-to-other-message"),
                                            ("reply-from-other", "reply-from-other")])
def test_bad_replies_are_named_and_not_remembered(site: tuple[HostileSite, str], me: str,
                                                  name: str, code: str) -> None:
    hostile, base = site
    mark = len(hostile.posts)
    out = dm(hostile.did(name), "hi", "--connect", f"{base}/{name}", "--json")
    assert out.exit_code == 1, out.output
    doc = as_json(out)
    errors = [r["code"] for r in doc["reply"]["reasons"] if r["severity"] == "error"]
    assert errors == [code]
    assert doc["remembered"] is False
    assert posts_to(hostile, name, mark) == ["message/send"]
    text = dm(hostile.did(name), "hi", "--connect", f"{base}/{name}")
    assert "UNVERIFIED" in text.stdout and "reply from" not in text.stdout


def test_task_reply_verified_with_its_status(site: tuple[HostileSite, str], me: str) -> None:
    hostile, base = site
    out = dm(hostile.did("reply-task"), "hi", "--connect", f"{base}/reply-task", "--json")
    assert out.exit_code == 0, out.output
    reply = as_json(out)["reply"]
    assert reply["kind"] == "task" and reply["state"] == "completed" and reply["verified"]


@pytest.mark.parametrize(("name", "code", "retry"), [("rate", "door-refused", 7),
                                                     ("busy", "unavailable", 3)])
def test_429_and_503_are_the_doors_answer_not_retried(site: tuple[HostileSite, str], me: str,
                                                      name: str, code: str, retry: int) -> None:
    hostile, base = site
    mark = len(hostile.posts)
    out = dm(hostile.did(name), "hi", "--connect", f"{base}/{name}", "--json")
    assert out.exit_code == 4, out.output
    doc = as_json(out)
    assert doc["error"] == code and doc["retryAfter"] == retry
    assert posts_to(hostile, name, mark) == ["message/send"]


def test_jsonrpc_errors_are_shown_with_untrusted_text_made_safe(
        site: tuple[HostileSite, str], me: str) -> None:
    hostile, base = site
    out = dm(hostile.did("approval"), "hi", "--connect", f"{base}/approval", "--json")
    assert out.exit_code == 0  # held for approval is not a failure (issue 12)
    doc = as_json(out)
    assert doc["state"] == "held"
    assert doc["rpcError"]["code"] == -32014
    assert doc["rpcError"]["data"]["needsHumanConfirmation"] is True
    text = dm(hostile.did("approval"), "hello?", "--connect", f"{base}/approval")
    assert text.exit_code == 0 and text.stdout.startswith("held for approval")
    assert "\x1b" not in text.stderr and "waits for the owner" in text.stderr
    assert "agentHint (untrusted)" in text.stderr
    other = dm(hostile.did("rpc-error"), "hi", "--connect", f"{base}/rpc-error")
    assert other.exit_code == 4 and "-32003" in other.stderr


def test_grant_for_another_did_refused_before_any_post(site: tuple[HostileSite, str], me: str,
                                                        tmp_path: Path) -> None:
    hostile, base = site
    grant = tmp_path / "grant.json"
    grant.write_text(json.dumps(mint_grant(hostile.other_key, uses=1, now=int(time.time()))))
    mark = len(hostile.posts)
    out = dm(hostile.did("good"), "hi", "--connect", str(grant), "--card-url", f"{base}/good",
             "--json")
    assert out.exit_code == 1 and as_json(out)["error"] == "grant-for-other-did"
    assert hostile.posts[mark:] == []


def test_expired_grant_refused(site: tuple[HostileSite, str], me: str, tmp_path: Path) -> None:
    hostile, base = site
    grant = tmp_path / "grant.json"
    grant.write_text(json.dumps(mint_grant(hostile.key("good"), uses=1,
                                           now=int(time.time()) - 10 * 86400, ttl=86400)))
    mark = len(hostile.posts)
    out = dm(hostile.did("good"), "hi", "--connect", str(grant), "--card-url", f"{base}/good",
             "--json")
    assert out.exit_code == 1 and as_json(out)["error"] == "expired"
    assert hostile.posts[mark:] == []


def test_grant_without_an_address_is_a_usage_error(site: tuple[HostileSite, str], me: str,
                                                    tmp_path: Path) -> None:
    hostile, _ = site
    grant = tmp_path / "grant.json"
    grant.write_text(json.dumps(mint_grant(hostile.key("good"), uses=1, now=int(time.time()))))
    out = dm(hostile.did("good"), "hi", "--connect", str(grant), "--json")
    assert out.exit_code == 2 and as_json(out)["error"] == "no-address"


def test_cards_refused_contact_grant_refuses_first_dm(site: tuple[HostileSite, str],
                                                       me: str) -> None:
    hostile, base = site
    mark = len(hostile.posts)
    for name, code in (("grant-expired", "expired"), ("grant-other", "grant-for-other-did")):
        out = dm(hostile.did(name), "hi", "--connect", f"{base}/{name}", "--json")
        assert out.exit_code == 1 and as_json(out)["error"] == code, out.output
    assert hostile.posts[mark:] == []


def test_card_naming_another_did_refused(site: tuple[HostileSite, str], me: str) -> None:
    hostile, base = site
    mark = len(hostile.posts)
    out = dm(hostile.did("open"), "hi", "--connect", f"{base}/good", "--json")
    assert out.exit_code == 1 and as_json(out)["error"] == "card-refused"
    forged = dm(hostile.did("forged-env"), "hi", "--connect", f"{base}/forged-env", "--json")
    assert forged.exit_code == 1 and as_json(forged)["error"] == "card-refused"
    assert hostile.posts[mark:] == []


def test_not_connected_without_connect_is_a_usage_error(site: tuple[HostileSite, str],
                                                        me: str) -> None:
    out = dm(site[0].did("open"), "hi", "--json")
    assert out.exit_code == 2 and as_json(out)["error"] == "not-connected"


def test_message_from_stdin_and_file(site: tuple[HostileSite, str], me: str,
                                     tmp_path: Path) -> None:
    hostile, base = site
    out = dm(hostile.did("open"), "-", "--connect", f"{base}/open", input="from stdin\n")
    assert out.exit_code == 0 and "received: from stdin" in out.stdout
    path = tmp_path / "msg.txt"
    path.write_text("from a file\n")
    out = dm(hostile.did("open"), "--message-file", str(path), "--connect", f"{base}/open")
    assert out.exit_code == 0 and "received: from a file" in out.stdout
    both = dm(hostile.did("open"), "x", "--message-file", str(path), "--connect",
              f"{base}/open")
    assert both.exit_code == 2


def test_black_hole_door_times_out_after_one_byte_identical_retry(site: tuple[HostileSite, str],
                                                          me: str, tmp_path: Path) -> None:
    hostile, base = site
    grant = tmp_path / "grant.json"
    grant.write_text(json.dumps(mint_grant(hostile.key("blackhole"), uses=1,
                                           now=int(time.time()))))
    # The card itself black-holes too, so the address comes from a remembered connection.
    from muretai_cli.home import ConnectionStore

    ConnectionStore(me).remember(hostile.did("blackhole"), endpoint=f"{base}/blackhole",
                                 base=f"{base}/blackhole", now=int(time.time()))
    mark = len(hostile.posts)
    started = time.monotonic()
    out = dm(hostile.did("blackhole"), "hi", "--timeout", "1", "--json")
    assert out.exit_code == 5, out.output
    assert time.monotonic() - started < 15, "ended by the 1 s deadline (the hole holds 30 s)"
    # a lost answer is retried once, byte for byte (issue 8 §8), within the one deadline
    assert posts_to(hostile, "blackhole", mark) == ["message/send", "message/send"]


def test_refused_redeem_sends_no_message(site: tuple[HostileSite, str], me: str,
                                         tmp_path: Path) -> None:
    hostile, base = site
    grant = tmp_path / "grant.json"
    grant.write_text(json.dumps(mint_grant(hostile.key("rate"), uses=1, now=int(time.time()))))
    mark = len(hostile.posts)
    out = dm(hostile.did("rate"), "hi", "--connect", str(grant), "--card-url", f"{base}/rate",
             "--json")
    assert out.exit_code == 4 and as_json(out)["retryAfter"] == 7
    assert posts_to(hostile, "rate", mark) == ["contact/redeem"]
