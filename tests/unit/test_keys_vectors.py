"""The key, owner-state, binding, invite and claim groups of the golden vectors.

Each runner reads every pin (root DID, expected device, pinned KeyState, check time) from
the case, never from the record, and passes a refusal only with the reason it exists for.
"""

from __future__ import annotations

from typing import Any

import pytest

from muretai_cli.conformance import keys as conformance_keys
from muretai_cli.conformance import run_conformance

GROUPS = {"binding": 2, "bindingV2": 5, "ownerState": 7, "invite": 2, "reject.invite": 2,
          "reject.claim": 2, "reject.keystate": 11}


@pytest.mark.parametrize(("group", "count"), sorted(GROUPS.items()))
def test_group_passes_every_case(wire_vectors: dict[str, Any], group: str, count: int) -> None:
    cases = conformance_keys.RUNNERS[group](wire_vectors)
    assert len(cases) == count
    assert [name for name, ok in cases if not ok] == []


def test_conformance_runs_these_groups_and_skips_none_of_them(
        wire_vectors: dict[str, Any]) -> None:
    results = {r.group: r for r in run_conformance(wire_vectors)}
    for group in GROUPS:
        assert results[group].status == "passed", results[group].to_json()


def test_a_verifier_refusing_for_the_wrong_reason_fails(
        wire_vectors: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from muretai_cli.errors import Refused

    def refuse_everything(*args: object, **kwargs: object) -> None:
        raise Refused("nope", "refuses everything")

    for name in ("verify_owner_state", "verify_binding", "verify_invite", "accept_claim"):
        monkeypatch.setattr(conformance_keys, name, refuse_everything)
    for group in ("ownerState", "bindingV2", "reject.invite", "reject.claim"):
        cases = conformance_keys.RUNNERS[group](wire_vectors)
        assert not all(ok for _, ok in cases), group


def test_claim_runner_needs_the_signature_checked_first(
        wire_vectors: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # A claim judge that looks only at the nonce refuses both cases, the unsigned one for the
    # wrong reason, and the runner says so.
    from muretai_cli.errors import Refused

    def nonce_only(obj: Any, *, inviter_did: str, now: int, spend: Any) -> None:
        raise Refused("unknown-nonce", "never issued")

    monkeypatch.setattr(conformance_keys, "accept_claim", nonce_only)
    cases = dict(conformance_keys.reject_claim(wire_vectors))
    assert cases == {"claim-unsigned": False, "claim-unknown-nonce": True}
