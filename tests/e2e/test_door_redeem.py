"""contact/redeem at the door goes through the grant artifact's one check
(``artifacts.grant.check_redeem``), with the door's rate and lists between the redeemer's
half and the grant's, so a blocked redeemer is told ``blocked`` whatever its grant is."""

from __future__ import annotations

import time
from typing import Any

import pytest

from muretai_cli.artifacts import grant as grant_artifact
from muretai_cli.artifacts.grant import mint_grant, redeem_params
from muretai_cli.seam import SigningKey
from tests.door_helpers import Live, code_of, local_door


def _redeem(door: Live, who: SigningKey, grant: dict[str, Any]) -> dict[str, Any]:
    params = redeem_params(who, grant, now=int(time.time()))
    return door.rpc({"jsonrpc": "2.0", "id": 9, "method": "contact/redeem", "params": params})


def _grant(door: Live, *, ttl: int = 3600, now: int | None = None) -> dict[str, Any]:
    grant = mint_grant(door.key, uses=2, now=int(time.time()) if now is None else now, ttl=ttl)
    store = door.store()
    try:
        store.add_grant(grant, int(time.time()))
    finally:
        store.close()
    return grant


def test_the_door_calls_the_artifacts_one_redeem_check(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    calls: list[str] = []
    real = grant_artifact.check_redeem

    def spy(params: object, **kw: Any) -> Any:
        calls.append(kw["door_did"])
        return real(params, **kw)

    monkeypatch.setattr(grant_artifact, "check_redeem", spy)
    with local_door("closed") as door:
        doc = _redeem(door, SigningKey.generate(), _grant(door))
        assert doc["result"]["ok"] is True
        assert calls == [door.did]


def test_the_lists_come_before_the_grant_and_the_grant_refusal_keeps_its_code() -> None:
    with local_door("closed") as door:
        now = int(time.time())
        expired = _grant(door, now=now - 7200, ttl=3600)
        bob, mallory = SigningKey.generate(), SigningKey.generate()
        doc = _redeem(door, bob, expired)
        assert (code_of(doc), doc["error"]["data"]["reason"]) == (-32011, "expired")
        store = door.store()
        try:
            store.set_sender(mallory.did, "blocked", now)
        finally:
            store.close()
        doc = _redeem(door, mallory, expired)
        assert (code_of(doc), doc["error"]["data"]["reason"]) == (-32010, "blocked")
