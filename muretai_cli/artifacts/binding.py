"""Device-key bindings (seam §5): an owner saying "this device acts for me".

    v2 {"typ": "muretai/devicebinding/2", "rootDid", "deviceDid", "ts", "validUntil",
        "sig", "deviceSig"}   -- BOTH keys sign the canonical five fields
    v1 {"rootDid", "deviceDid", "ts", "sig"}   -- the owner's word alone

A binding is public: anyone who has seen one can attach it to their own message. So the
verifier takes the device it believes it is talking to from its CALLER (``device_did``) and
refuses a binding about any other device. v1 carries no countersignature, so it cannot show
the device ever agreed; it is read, and said to be weaker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from muretai_cli.artifacts._signed import int_field, str_field
from muretai_cli.errors import Refused
from muretai_cli.seam import SigningKey, canonical_bytes, verify_signature
from muretai_cli.verdict import Reason, warning

BINDING_V2_TYP = "muretai/devicebinding/2"


@dataclass(frozen=True, slots=True)
class Binding:
    """A verified binding. Built only by ``verify_binding``."""

    version: int
    root_did: str
    device_did: str
    ts: int
    valid_until: int
    record: Mapping[str, Any] = field(repr=False)

    @property
    def notes(self) -> tuple[Reason, ...]:
        if self.version == 1:
            return (warning("owner-only", "a v1 binding carries only the owner's signature; "
                            "it does not show that the device agreed"),)
        return ()


def v1_payload(root_did: str, device_did: str, ts: int) -> bytes:
    return canonical_bytes({"deviceDid": device_did, "rootDid": root_did, "ts": ts})


def v2_payload(root_did: str, device_did: str, ts: int, valid_until: int) -> bytes:
    return canonical_bytes({"typ": BINDING_V2_TYP, "rootDid": root_did,
                            "deviceDid": device_did, "ts": ts, "validUntil": valid_until})


def verify_binding(obj: object, *, device_did: str, now: int) -> Binding:
    """A binding about the device the CALLER expects, valid at ``now``; or ``Refused``:
    ``malformed-binding``, ``wrong-typ``, ``float-in-payload``, ``device-mismatch``,
    ``expired``, ``missing-sig``/``missing-device-sig`` or a signature code.

    A record with ``typ`` is v2 and must be exactly v2; one without is v1.
    """
    if not isinstance(obj, dict):
        raise Refused("malformed-binding", "a binding is a JSON object")
    v2 = "typ" in obj
    if v2 and obj["typ"] != BINDING_V2_TYP:
        raise Refused("wrong-typ", f"typ must be {BINDING_V2_TYP!r} (or absent, for v1)")
    root = str_field(obj, "rootDid", code="malformed-binding")
    device = str_field(obj, "deviceDid", code="malformed-binding")
    ts = int_field(obj, "ts", code="malformed-binding")
    valid_until = int_field(obj, "validUntil", code="malformed-binding") if v2 else 0
    if valid_until < 0:
        raise Refused("malformed-binding", "validUntil is 0 (no expiry) or an epoch second")
    if not isinstance(device_did, str) or not device_did:
        raise Refused("device-mismatch", "the verifier was given no device to expect")
    if device != device_did:
        raise Refused("device-mismatch", f"the binding is about {device}, not {device_did}")
    if valid_until and now > valid_until:
        raise Refused("expired", f"valid until {valid_until}, judged at {now}")
    if obj.get("sig") is None:
        raise Refused("missing-sig", "the binding carries no owner signature")
    if not v2:
        verify_signature(root, v1_payload(root, device, ts), obj["sig"])
        return Binding(1, root, device, ts, 0, dict(obj))
    if obj.get("deviceSig") is None:
        raise Refused("missing-device-sig", "a v2 binding needs the device's countersignature")
    payload = v2_payload(root, device, ts, valid_until)
    verify_signature(root, payload, obj["sig"])
    verify_signature(device, payload, obj["deviceSig"])
    return Binding(2, root, device, ts, valid_until, dict(obj))


def mint_binding(owner: SigningKey, device: SigningKey, *, now: int, valid_until: int = 0
                 ) -> dict[str, Any]:
    """A v2 binding: the owner signs, the device countersigns the same bytes."""
    if valid_until and valid_until <= now:
        raise Refused("bad-expiry", "validUntil must be in the future (or 0: no expiry)")
    payload = v2_payload(owner.did, device.did, now, valid_until)
    return {"typ": BINDING_V2_TYP, "rootDid": owner.did, "deviceDid": device.did, "ts": now,
            "validUntil": valid_until, "sig": owner.sign(payload),
            "deviceSig": device.sign(payload)}
