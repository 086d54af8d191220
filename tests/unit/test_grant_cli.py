"""``verify grant`` (batch), grant rules as the visitor applies them, and durations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from muretai_cli.artifacts.grant import mint_grant
from muretai_cli.cli import app
from muretai_cli.cli._durations import parse_duration, parse_seconds
from muretai_cli.errors import InputError
from muretai_cli.seam import SigningKey

DOOR = SigningKey(b"\x11" * 32)
OTHER = SigningKey(b"\x12" * 32)
NOW = 1_700_000_000


def verify(*args: str, input: str | None = None) -> tuple[int, dict[str, object]]:
    out = CliRunner().invoke(app, ["verify", "grant", *args, "--json"], input=input)
    doc = json.loads(out.stdout)
    assert next(iter(doc)) == "ok"
    return out.exit_code, doc


def codes(doc: dict[str, object]) -> list[list[str]]:
    results = doc["results"]
    assert isinstance(results, list)
    return [[r["code"] for r in item["reasons"]] for item in results]


def test_good_grant(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(mint_grant(DOOR, uses=3, now=NOW, purpose="support")))
    code, doc = verify(str(path), "--for", DOOR.did, "--now", str(NOW + 10))
    assert code == 0 and codes(doc) == [[]]


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda g: g, "grant-for-other-did"),  # checked --for OTHER
    (lambda g: {**g, "uses": 9}, "bad-signature"),
    (lambda g: {**g, "exp": float(g["exp"])}, "float-in-payload"),
    (lambda g: {**g, "typ": "muretai/contact-grant/2"}, "wrong-typ"),
    (lambda g: {k: v for k, v in g.items() if k != "sig"}, "missing-sig"),
])
def test_grant_refusals(tmp_path: Path, mutate: object, expected: str) -> None:
    grant = mint_grant(DOOR, uses=3, now=NOW)
    path = tmp_path / "g.json"
    path.write_text(json.dumps(mutate(grant)))  # type: ignore[operator]
    target = OTHER.did if expected == "grant-for-other-did" else DOOR.did
    code, doc = verify(str(path), "--for", target, "--now", str(NOW))
    assert code == 1 and codes(doc) == [[expected]]


def test_expiry_and_future_iat(tmp_path: Path) -> None:
    grant = mint_grant(DOOR, uses=1, now=NOW, ttl=60)
    line = json.dumps(grant) + "\n"
    code, doc = verify("-", "--for", DOOR.did, "--now", str(NOW + 60), input=line)
    assert code == 1 and codes(doc) == [["expired"]]
    code, doc = verify("-", "--for", DOOR.did, "--now", str(NOW - 301), input=line)
    assert code == 1 and codes(doc) == [["issued-in-future"]]
    code, doc = verify("-", "--for", DOOR.did, "--now", str(NOW - 300), input=line)
    assert code == 0


def test_batch_worst_exit(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(mint_grant(DOOR, uses=1, now=NOW)))
    code, doc = verify(str(good), str(tmp_path / "missing.json"), "--for", DOOR.did, "--now",
                       str(NOW))
    assert code == 2 and [r["ok"] for r in doc["results"]] == [True, False]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("5m", 300),
                                               ("2h", 7200), ("7d", 604800), ("1w", 604800),
                                               ("30D", 2592000), ("1.5d", 129600),
                                               ("1.5h", 5400), ("2.5s", 2)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "0d", "-1d", "0.5s", "1.d", ".5h", "7 days", "1y",
                                  "d", "1e3"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(InputError):
        parse_duration(text)


def test_timeout_seconds() -> None:
    assert parse_seconds("1.5") == 1.5 and parse_seconds("2m") == 120
    assert parse_seconds("1.5s") == 1.5 and parse_seconds("0.5m") == 30
    for bad in ("0", "-1", "nan", "inf", "soon", "1e3"):
        with pytest.raises(InputError):
            parse_seconds(bad)


def test_each_duration_hint_shows_units_that_fit() -> None:
    with pytest.raises(InputError) as lifetime:
        parse_duration("soon", name="--expires")
    with pytest.raises(InputError) as timeout:
        parse_seconds("soon")
    assert "7d" in str(lifetime.value.hint) and "1.5s" not in str(lifetime.value.hint)
    assert "1.5s" in str(timeout.value.hint) and "7d" not in str(timeout.value.hint)


def test_grant_ids_are_128_bit_hex_and_never_look_like_an_option() -> None:
    import re

    from muretai_cli.artifacts.grant import mint_grant
    from muretai_cli.seam import SigningKey

    key = SigningKey(b"\x07" * 32)
    for _ in range(300):  # a base64url id started with "-" once in 64 grants
        grant_id = mint_grant(key, uses=1, now=1000)["id"]
        assert re.fullmatch(r"[0-9a-f]{32}", grant_id), grant_id
