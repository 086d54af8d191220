"""A new user's mistakes about being reachable are caught, each with the command that fixes
it (issue 22, item 14): a relay that holds no card of yours (`id new --relay`, `op dm`), an
invite with no address, a port in use, a URL without a scheme. The relay and `serve` are real processes (a port in use is the
process's own error); the other commands run in-process (``in_process``: the command line's
own path, exit codes and streams); the DM goes through the live relay."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_helpers import in_process, muretai, new_identity
from tests.servers import ServeProc, running, start_relay


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def relay(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server: ServeProc = start_relay(tmp_path, "--url", url, "--port", str(port),
                                    "--db", str(tmp_path / "relay.sqlite3"))
    with running(server):
        yield url


def test_id_new_with_a_relay_says_the_card_is_not_published(relay: str) -> None:
    made = in_process("id", "new", "alice", "--relay", relay)
    assert made.returncode == 0, made.stderr
    assert "warning: card-not-published" in made.stderr
    assert "`muretai card publish --as alice`" in made.stderr
    doc = json.loads(in_process("id", "new", "bob", "--relay", relay, "--json").stdout)
    assert [w["code"] for w in doc["warnings"]] == ["card-not-published"]
    quiet = in_process("id", "new", "carol")        # no relay: nothing to publish
    assert quiet.returncode == 0 and "warning" not in quiet.stderr


def test_a_dm_from_an_identity_whose_card_the_relay_lacks_warns(relay: str) -> None:
    for name in ("alice", "bob"):
        assert in_process("id", "new", name, "--relay", relay).returncode == 0
    assert in_process("card", "publish", "--as", "bob").returncode == 0
    bob = in_process("id", "show", "bob", "--json")
    bob_did = json.loads(bob.stdout)["did"]
    sent = in_process("op", "--as", "alice", "dm", bob_did, "hello", "--relay", relay)
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.startswith("queued at")
    assert "warning: card-not-published" in sent.stderr, sent.stderr
    assert "cannot reply" in sent.stderr and "`muretai card publish --as alice`" in sent.stderr
    doc = json.loads(in_process("op", "--as", "alice", "dm", bob_did, "again", "--relay", relay,
                             "--json").stdout)
    assert doc["state"] == "queued"
    assert [w["code"] for w in doc["warnings"]] == ["card-not-published"]
    assert in_process("card", "publish", "--as", "alice").returncode == 0
    fixed = in_process("op", "--as", "alice", "dm", bob_did, "now you can", "--relay", relay)
    assert fixed.returncode == 0 and "card-not-published" not in fixed.stderr, fixed.stderr


def test_an_invite_with_no_address_says_how_to_give_one() -> None:
    new_identity("alice")
    made = in_process("invite", "create", "--as", "alice")
    assert made.returncode == 2
    assert "unreachable-identity" in made.stderr
    assert "--url" in made.stderr and "--relay" in made.stderr
    assert "`muretai id relay NAME URL`" in made.stderr


@pytest.mark.parametrize("kind", ["serve", "relay serve"])
def test_a_port_in_use_says_what_to_do(kind: str, tmp_path: Path) -> None:
    new_identity("alice")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        argv = ["serve", "--as", "alice"] if kind == "serve" else \
            ["relay", "serve", "--db", str(tmp_path / "r.sqlite3")]
        done = muretai(*argv, "--url", f"http://127.0.0.1:{port}", "--port", port)
    assert done.returncode == 2, done.stderr
    assert "cannot-bind" in done.stderr and "Address already in use" in done.stderr
    assert "another process listens on 127.0.0.1:" in done.stderr
    assert "--port 0 picks a free one" in done.stderr


@pytest.mark.parametrize(("argv", "fix"), [
    (["id", "new", "alice", "--relay", "relay.example"], "use https://relay.example"),
    (["card", "fetch", "shop.example:8443/agent"], "use https://shop.example:8443/agent"),
    (["serve", "--as", "bob", "--url", "127.0.0.1:18788"], "use http://127.0.0.1:18788"),
    (["relay", "serve", "--url", "localhost:8790"], "use http://localhost:8790"),
])
def test_a_url_without_a_scheme_gets_the_url_to_use(argv: list[str], fix: str) -> None:
    new_identity("bob")
    done = muretai(*argv)
    assert done.returncode == 2, done.stderr
    assert "bad-url" in done.stderr and "has no scheme" in done.stderr
    assert f"hint: {fix}" in done.stderr
