"""OwnerState and device bindings: round trips, and each refusal for its own reason."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from muretai_cli.artifacts.binding import mint_binding, v1_payload, verify_binding
from muretai_cli.artifacts.ownerstate import (
    MAX_REVOKED_DEVICES,
    WARN_REVOKED_AT,
    mint_owner_state,
    verify_owner_state,
)
from muretai_cli.errors import MuretaiError, Refused
from muretai_cli.seam import SigningKey

NOW = 1_784_273_681
OWNER = SigningKey(bytes([3]) * 32)
DEVICE = SigningKey(bytes([4]) * 32)
OTHER = SigningKey(bytes([5]) * 32)


def devices(n: int) -> list[str]:
    return [SigningKey(i.to_bytes(2, "big") * 16).did for i in range(1, n + 1)]


def refused(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(Refused) as info:
        fn(*args, **kwargs)
    return info.value.code


# -- OwnerState ---------------------------------------------------------------------------


def test_owner_state_round_trip_sorted_and_deduplicated() -> None:
    b, a = devices(2)
    record, warnings = mint_owner_state(OWNER, epoch=3, revoked=[b, a, b], now=NOW)
    assert record["revoked"] == sorted([a, b]) and warnings == []
    state = verify_owner_state(record, root_did=OWNER.did)
    assert state.disowns(a) and not state.disowns(DEVICE.did) and state.epoch == 3
    assert verify_owner_state({**record, "later": 1}, root_did=OWNER.did)  # unknown keys ignored


def test_owner_state_refusals() -> None:
    record, _ = mint_owner_state(OWNER, epoch=3, revoked=devices(2), now=NOW)
    assert refused(verify_owner_state, record, root_did=OTHER.did) == "root-mismatch"
    assert refused(verify_owner_state, {**record, "epoch": 4},
                   root_did=OWNER.did) == "bad-signature"
    broken = {**record, "sig": OTHER.sign(b"x")}
    assert refused(verify_owner_state, broken, root_did=OWNER.did) == "bad-signature"
    flipped = {**record, "revoked": list(reversed(record["revoked"]))}
    assert refused(verify_owner_state, flipped, root_did=OWNER.did) == "non-canonical-revoked"
    assert refused(verify_owner_state, {**record, "ts": 1.5},
                   root_did=OWNER.did) == "float-in-payload"
    no_sig = {k: v for k, v in record.items() if k != "sig"}
    assert refused(verify_owner_state, no_sig, root_did=OWNER.did) == "missing-sig"


def test_owner_state_mint_warns_near_the_cap_and_says_what_fell_off() -> None:
    _, warnings = mint_owner_state(OWNER, epoch=1, revoked=devices(WARN_REVOKED_AT), now=NOW)
    assert [w.code for w in warnings] == ["revocations-near-cap"]
    many = devices(MAX_REVOKED_DEVICES + 2)
    record, warnings = mint_owner_state(OWNER, epoch=1, revoked=many, now=NOW)
    assert [w.code for w in warnings] == ["revocations-dropped"]
    state = verify_owner_state(record, root_did=OWNER.did)
    # the two oldest fell off: absence from a capped list is not proof of never disowned
    assert not state.disowns(many[0]) and state.disowns(many[-1])


# -- bindings -----------------------------------------------------------------------------


def test_binding_v2_round_trip_and_the_device_pin_comes_from_the_caller() -> None:
    binding = mint_binding(OWNER, DEVICE, now=NOW)
    assert verify_binding(binding, device_did=DEVICE.did, now=NOW).version == 2
    # the same bytes presented for another device: refused on the pin alone
    assert refused(verify_binding, binding, device_did=OTHER.did, now=NOW) == "device-mismatch"


def test_binding_v2_refusals() -> None:
    binding = mint_binding(OWNER, DEVICE, now=NOW, valid_until=NOW + 10)
    assert refused(verify_binding, binding, device_did=DEVICE.did, now=NOW + 11) == "expired"
    edited = {**binding, "validUntil": 0}
    assert refused(verify_binding, edited, device_did=DEVICE.did, now=NOW) == "bad-signature"
    foreign = {**binding, "sig": OTHER.sign(b"anything")}
    assert refused(verify_binding, foreign, device_did=DEVICE.did, now=NOW) == "bad-signature"
    no_counter = {k: v for k, v in binding.items() if k != "deviceSig"}
    assert refused(verify_binding, no_counter, device_did=DEVICE.did,
                   now=NOW) == "missing-device-sig"
    # a device countersignature by the wrong key (owner signs twice) is refused
    twice = {**binding, "deviceSig": binding["sig"]}
    assert refused(verify_binding, twice, device_did=DEVICE.did, now=NOW) == "bad-signature"
    assert refused(verify_binding, {**binding, "typ": "muretai/devicebinding/1"},
                   device_did=DEVICE.did, now=NOW) == "wrong-typ"


def test_binding_v1_reads_the_owner_word_and_says_it_is_weaker() -> None:
    v1 = {"rootDid": OWNER.did, "deviceDid": DEVICE.did, "ts": NOW,
          "sig": OWNER.sign(v1_payload(OWNER.did, DEVICE.did, NOW))}
    got = verify_binding(v1, device_did=DEVICE.did, now=NOW)
    assert got.version == 1 and [n.code for n in got.notes] == ["owner-only"]
    assert refused(verify_binding, {**v1, "ts": NOW + 1}, device_did=DEVICE.did,
                   now=NOW) == "bad-signature"
    assert refused(verify_binding, v1, device_did=OTHER.did, now=NOW) == "device-mismatch"


def test_binding_v1_with_a_p256_root_is_refused_by_name(wire_vectors: dict[str, Any]) -> None:
    case = wire_vectors["binding"][0]
    record = {"rootDid": case["rootDid"], "deviceDid": case["deviceDid"], "ts": case["ts"],
              "sig": OWNER.sign(b"x")}
    assert refused(verify_binding, record, device_did=case["deviceDid"],
                   now=NOW) == "not-ed25519"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(["typ", "rootDid", "deviceDid", "ts", "validUntil", "sig",
                        "deviceSig", "epoch", "revoked"]), json_values)
def test_verifiers_are_total(field: str, value: object) -> None:
    binding = copy.deepcopy(mint_binding(OWNER, DEVICE, now=NOW))
    state, _ = mint_owner_state(OWNER, epoch=1, revoked=devices(1), now=NOW)
    for original, check in ((binding, lambda r: verify_binding(r, device_did=DEVICE.did,
                                                             now=NOW)),
                          (state, lambda r: verify_owner_state(r, root_did=OWNER.did))):
        record = {**original, field: value}
        with contextlib.suppress(MuretaiError):
            check(record)
