"""``sign``/``verify`` keystate, owner-state and binding; the KeyState pin store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from muretai_cli.artifacts.keystate import signed_payload
from muretai_cli.home import KeyStatePins
from tests.cli_helpers import new_identity, run, run_json

NOW = 1_784_273_681


@pytest.fixture
def ids() -> dict[str, str]:
    return {name: new_identity(name) for name in ("root", "op1", "op2", "dev", "other")}


def sign(tmp_path: Path, name: str, *args: str) -> tuple[Path, dict[str, Any]]:
    result = run("sign", *args, "--now", str(NOW))
    assert result.exit_code == 0, result.stderr
    path = tmp_path / name
    path.write_text(result.stdout)
    return path, json.loads(result.stdout)


def write(tmp_path: Path, name: str, doc: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def verify(*args: str) -> tuple[int, dict[str, Any]]:
    code, doc = run_json("verify", *args)
    return code, doc["results"][0]


def codes(item: dict[str, Any]) -> list[str]:
    return [r["code"] for r in item["reasons"] if r["severity"] == "error"]


def test_keystate_round_trip_rotation_and_pin_store(tmp_path: Path, ids: dict[str, str]) -> None:
    root = ids["root"]
    ks1, doc1 = sign(tmp_path, "ks1.json", "keystate", "--as", "root", "--op", "op1")
    ks2, doc2 = sign(tmp_path, "ks2.json", "keystate", "--as", "root", "--op", "op2")
    assert (doc1["epoch"], doc2["epoch"]) == (1, 2)
    assert doc2["revokedOps"] == [ids["op1"]]          # the replaced op key is burned
    code, item = verify("keystate", str(ks1), "--root", root, "--now", str(NOW), "--pin")
    assert code == 0 and item["opDid"] == ids["op1"] and item["pinnedNow"] is True
    # a newer record displaces the pin; the older one is then a rollback
    code, item = verify("keystate", str(ks2), "--root", root, "--now", str(NOW), "--pin")
    assert code == 0 and item["opDid"] == ids["op2"] and item["pinnedNow"] is True
    code, item = verify("keystate", str(ks1), "--root", root, "--now", str(NOW), "--pin")
    assert code == 1 and codes(item) == ["keystate-rollback"] and item["opDid"] == ids["op2"]
    assert item["pinSource"] == "store" and item["pinnedNow"] is False
    assert KeyStatePins().get(root)["epoch"] == 2  # type: ignore[index]
    shown = run("verify", "keystate", str(ks1), "--root", root, "--now", str(NOW))
    assert shown.exit_code == 1 and shown.stdout.startswith("FAIL")
    assert f"keystate-rollback: epoch 1 is older than the pinned epoch 2; in force: " \
           f"{ids['op2']} (from the pin)" in shown.stdout    # the answer, in text too
    # re-verifying the pinned record itself is fine and changes nothing
    code, item = verify("keystate", str(ks2), "--root", root, "--now", str(NOW), "--pin")
    assert code == 0 and item["pinnedNow"] is False


def test_keystate_pinned_file_and_refusals(tmp_path: Path, ids: dict[str, str]) -> None:
    root = ids["root"]
    ks1, doc1 = sign(tmp_path, "ks1.json", "keystate", "--as", "root", "--op", "op1")
    ks2, doc2 = sign(tmp_path, "ks2.json", "keystate", "--as", "root", "--op", "op2")
    code, item = verify("keystate", str(ks1), "--root", root, "--pinned", str(ks2),
                        "--now", str(NOW))
    assert code == 1 and codes(item) == ["keystate-rollback"] and item["pinSource"] == "file"
    # the root comes from the caller: the same record judged for another root
    code, item = verify("keystate", str(ks2), "--root", ids["other"], "--now", str(NOW))
    assert code == 1 and codes(item) == ["root-mismatch"] and item["opDid"] == ids["other"]
    edited = write(tmp_path, "edited.json", {**doc2, "opDid": ids["other"]})
    code, item = verify("keystate", str(edited), "--root", root, "--now", str(NOW))
    assert code == 1 and codes(item) == ["bad-signature"] and item["opDid"] == root
    broken = write(tmp_path, "broken.json", {**doc2, "sig": doc1["sig"]})
    code, item = verify("keystate", str(broken), "--root", root, "--now", str(NOW))
    assert code == 1 and codes(item) == ["bad-signature"]
    # a pin file that does not verify fails closed to the root
    bad_pin = write(tmp_path, "badpin.json", {**doc1, "epoch": 1, "sig": doc2["sig"]})
    code, item = verify("keystate", str(ks2), "--root", root, "--pinned", str(bad_pin),
                        "--now", str(NOW))
    assert code == 1 and "pin-unusable" in codes(item) and item["opDid"] == root


def test_keystate_validity_window_from_the_caller_clock(tmp_path: Path,
                                                        ids: dict[str, str]) -> None:
    ks, _ = sign(tmp_path, "ks.json", "keystate", "--as", "root", "--op", "op1",
                 "--valid-until", str(NOW + 60))
    assert verify("keystate", str(ks), "--root", ids["root"], "--now", str(NOW))[0] == 0
    code, item = verify("keystate", str(ks), "--root", ids["root"], "--now", str(NOW + 61))
    assert code == 1 and codes(item) == ["expired"]


def test_keystate_mint_and_verify_say_the_burn_list_is_capped(tmp_path: Path,
                                                             ids: dict[str, str]) -> None:
    dids = {**ids, **{name: new_identity(name) for name in ("op3", "op4", "op5", "op6")}}
    said = []
    for op in ("op1", "op2", "op3", "op4", "op5", "op6"):  # each rotation burns the last op
        result = run("sign", "keystate", "--as", "root", "--op", op, "--now", str(NOW))
        assert result.exit_code == 0, result.stderr
        said.append([w for w in ("revoked-ops-full", "revoked-ops-dropped")
                     if w in result.stderr])
        last = json.loads(result.stdout)   # stdout stays only the record
    assert said == [[], [], [], [], ["revoked-ops-full"], ["revoked-ops-dropped"]]
    assert last["revokedOps"] == [dids[f"op{i}"] for i in (2, 3, 4, 5)]  # op1 fell off
    path = write(tmp_path, "ks.json", last)
    code, item = verify("keystate", str(path), "--root", ids["root"], "--now", str(NOW))
    assert code == 0 and item["opDid"] == dids["op6"]
    assert [(r["code"], r["severity"]) for r in item["reasons"]] == [
        ("revoked-ops-at-cap", "warning")]
    # delegating back to a key the last record burned is refused: pinned peers never follow
    result = run("sign", "keystate", "--as", "root", "--op", "op3", "--now", str(NOW))
    assert result.exit_code == 2 and "op-burned" in result.stderr and not result.stdout


def test_sign_refuses_an_epoch_that_does_not_advance(ids: dict[str, str]) -> None:
    assert run("sign", "keystate", "--as", "root", "--op", "op1", "--epoch", "5").exit_code == 0
    result = run("sign", "keystate", "--as", "root", "--op", "op2", "--epoch", "5")
    assert result.exit_code == 2 and "bad-epoch" in result.stderr


def test_owner_state_round_trip_and_refusals(tmp_path: Path, ids: dict[str, str]) -> None:
    _, doc = sign(tmp_path, "os.json", "owner-state", "--as", "root", "--revoke",
                     ids["dev"])
    path2, doc2 = sign(tmp_path, "os2.json", "owner-state", "--as", "root", "--revoke",
                       ids["op1"])
    assert doc2["epoch"] == doc["epoch"] + 1
    assert doc2["revoked"] == sorted([ids["dev"], ids["op1"]])  # revocations accumulate
    code, item = verify("owner-state", str(path2), "--root", ids["root"])
    assert code == 0 and item["revoked"] == doc2["revoked"] and item["cap"] == 64
    code, item = verify("owner-state", str(path2), "--root", ids["other"])
    assert code == 1 and codes(item) == ["root-mismatch"]
    edited = write(tmp_path, "e.json", {**doc2, "revoked": [ids["dev"]]})
    assert codes(verify("owner-state", str(edited), "--root", ids["root"])[1]) == [
        "bad-signature"]
    broken = write(tmp_path, "b.json", {**doc2, "sig": doc["sig"]})
    assert codes(verify("owner-state", str(broken), "--root", ids["root"])[1]) == [
        "bad-signature"]


def test_owner_state_mint_warns_near_the_cap(ids: dict[str, str]) -> None:
    from muretai_cli.seam import SigningKey

    many: list[str] = []
    for i in range(48):
        many += ["--revoke", SigningKey(bytes([i + 1]) * 32).did]
    result = run("sign", "owner-state", "--as", "root", *many)
    assert result.exit_code == 0 and "revocations-near-cap" in result.stderr
    assert json.loads(result.stdout)["revoked"]  # stdout is still only the record


def test_binding_round_trip_and_refusals(tmp_path: Path, ids: dict[str, str]) -> None:
    path, doc = sign(tmp_path, "b.json", "binding", "--as", "root", "--device", "dev",
                     "--valid-until", "1h")
    assert doc["validUntil"] == NOW + 3600
    code, item = verify("binding", str(path), "--device", ids["dev"], "--now", str(NOW))
    assert code == 0 and item["version"] == 2 and item["rootDid"] == ids["root"]
    # the device pin is the caller's: the binding presented for another device is refused
    code, item = verify("binding", str(path), "--device", ids["other"], "--now", str(NOW))
    assert code == 1 and codes(item) == ["device-mismatch"]
    code, item = verify("binding", str(path), "--device", ids["dev"], "--now",
                        str(NOW + 3601))
    assert code == 1 and codes(item) == ["expired"]
    edited = write(tmp_path, "e.json", {**doc, "validUntil": 0})
    assert codes(verify("binding", str(edited), "--device", ids["dev"])[1]) == [
        "bad-signature"]
    broken = write(tmp_path, "x.json", {**doc, "deviceSig": doc["sig"]})
    assert codes(verify("binding", str(broken), "--device", ids["dev"],
                        "--now", str(NOW))[1]) == ["bad-signature"]


def test_verify_commands_take_their_pins_as_options_only(tmp_path: Path,
                                                         ids: dict[str, str]) -> None:
    path, _ = sign(tmp_path, "b.json", "binding", "--as", "root", "--device", "dev")
    assert run("verify", "binding", str(path)).exit_code == 2          # --device required
    assert run("verify", "keystate", str(path)).exit_code == 2         # --root required
    assert run("verify", "owner-state", str(path)).exit_code == 2      # --root required
    result = run("verify", "binding", str(path), "--device", "did:key:nope")
    assert result.exit_code == 2 and "bad-did" in result.stderr


def test_a_broken_pin_store_fails_closed(tmp_path: Path, ids: dict[str, str]) -> None:
    ks1, doc1 = sign(tmp_path, "ks1.json", "keystate", "--as", "root", "--op", "op1")
    ks2, _ = sign(tmp_path, "ks2.json", "keystate", "--as", "root", "--op", "op2")
    assert verify("keystate", str(ks1), "--root", ids["root"], "--pin")[0] == 0
    store = KeyStatePins()
    tampered = {**doc1, "opDid": ids["other"]}
    assert signed_payload(tampered) != signed_payload(doc1)
    store.path.write_text(json.dumps({"v": 1, "pins": {ids["root"]: tampered}}))
    code, item = verify("keystate", str(ks2), "--root", ids["root"], "--pin")
    assert code == 1 and "pin-unusable" in codes(item) and item["opDid"] == ids["root"]
