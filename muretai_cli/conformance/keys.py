"""Conformance runners for the key-state, owner-state, binding, invite and claim groups.

Each runner returns ``(case name, passed)`` pairs. Every pin a verifier needs (the root DID,
the expected device, the pinned KeyState, the check time) is read from the vector case, at
its top level, never out of the record being judged. A refusal passes only with the reason
it exists for, so removing that one check turns the case red.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from muretai_cli.artifacts._signed import object_payload, verify_object
from muretai_cli.artifacts.binding import v1_payload, v2_payload, verify_binding
from muretai_cli.artifacts.invite import Claim, accept_claim, parse_exp, verify_invite
from muretai_cli.artifacts.keystate import Resolution, resolve_op_did
from muretai_cli.artifacts.ownerstate import signed_payload as owner_payload
from muretai_cli.artifacts.ownerstate import verify_owner_state
from muretai_cli.errors import MuretaiError, Refused

Cases = list[tuple[str, bool]]
Resolver = Callable[..., Resolution]

# The reason each named refusal must give (vector category -> our code); an unlisted
# category must still be refused, with any reason.
_OWNER_CODES = {"float-ts": "float-in-payload", "non-canonical": "non-canonical-revoked",
                "wrong-typ": "wrong-typ", "wrong-signer": "bad-signature",
                "missing-sig": "missing-sig"}
_BINDING_CODES = {"float-ts": "float-in-payload", "missing-deviceSig": "missing-device-sig",
                  "wrong-typ": "wrong-typ"}
_INVITE_CODES = {"expired-invite": "expired-invite", "forged-invite": "bad-signature"}
_SIGNATURE_CODES = {"bad-signature", "small-order-key", "bad-signature-length",
                    "sig-not-canonical-base64"}


def refused_with(code: str | None, fn: Callable[..., object], *args: Any,
                  **kwargs: Any) -> bool:
    try:
        fn(*args, **kwargs)
    except MuretaiError as exc:
        if code == "signature":
            return exc.code in _SIGNATURE_CODES
        return code is None or exc.code == code
    return False


def _accepts(fn: Callable[..., object], *args: Any, **kwargs: Any) -> bool:
    try:
        fn(*args, **kwargs)
    except MuretaiError:
        return False
    return True


def reject_keystate(doc: dict[str, Any], resolve: Resolver = resolve_op_did) -> Cases:
    """Both halves: an ``accept`` case must answer ``expect``; a ``refuse`` case too, and
    never ``mustNotResolveTo``. Any exception fails its case, named ``… (raised X)``: a raise
    and a wrong answer are different failures (the ``mustNotRaise`` cases), and the report
    says which it caught."""
    group = doc["reject"]["keystate"]
    root, now = group["rootDid"], group["checkNow"]
    if not group["accept"] or not group["refuse"]:
        raise ValueError("reject.keystate needs both its accept and its refuse half")
    out: Cases = []
    for half in ("accept", "refuse"):
        for c in group[half]:
            try:
                got = resolve(root, c["inline"], c["pinned"], now=now).op_did
            except Exception as exc:  # a raise IS the failure mustNotRaise names, per case
                out.append((f"{half}/{c['name']} (raised {type(exc).__name__})", False))
                continue
            ok = got == c["expect"] and got != c.get("mustNotResolveTo")
            out.append((f"{half}/{c['name']}", ok))
    return out


def owner_state(doc: dict[str, Any]) -> Cases:
    group = doc["ownerState"]
    if not group["reject"]:
        raise ValueError("ownerState has no reject cases")
    out: Cases = []
    for c in group["cases"]:
        rec = c["record"]
        good = owner_payload(rec) == c["statePayload"].encode()
        good = good and _accepts(verify_owner_state, rec, root_did=c["rootDid"])
        out.append((c["name"], good))
    root = group["cases"][0]["rootDid"]
    for c in group["reject"]:
        code = _OWNER_CODES.get(c["category"])
        out.append((f"reject/{c['name']}", refused_with(
            code, verify_owner_state, c["input"], root_did=root)))
    return out


def binding_v1(doc: dict[str, Any]) -> Cases:
    """v1 vectors pin the payload bytes (their root is P-256; no signature is carried)."""
    return [(c["name"], v1_payload(c["rootDid"], c["deviceDid"], c["ts"])
             == c["bindingPayload"].encode()) for c in doc["binding"]]


def binding_v2(doc: dict[str, Any]) -> Cases:
    group = doc["bindingV2"]
    now = group["checkNow"]
    devices = {c.get("expectedDeviceDid", c["deviceDid"]) for c in group["cases"]}
    if len(devices) != 1 or not group["reject"]:
        raise ValueError("bindingV2 needs one expected device and reject cases")
    out: Cases = []
    for c in group["cases"]:
        device = c.get("expectedDeviceDid", c["deviceDid"])
        good = v2_payload(c["rootDid"], c["deviceDid"], c["ts"], c["validUntil"]) == \
            c["bindingPayload"].encode()
        good = good and _accepts(verify_binding, c["binding"], device_did=device, now=now)
        out.append((c["name"], good))
    (default_device,) = devices
    for c in group["reject"]:
        device = c.get("expectedDeviceDid", default_device)
        code = _BINDING_CODES.get(c["category"])
        out.append((f"reject/{c['name']}", refused_with(
            code, verify_binding, c["input"], device_did=device, now=now)))
    return out


def invite(doc: dict[str, Any]) -> Cases:
    out: Cases = []
    for c in doc["invite"]:
        card = {**c["card"], "sig": c["sig"]}
        good = object_payload(c["card"]) == c["invitePayload"].encode()
        good = good and _accepts(verify_object, card, card["did"])
        if "checkNow" in c:
            good = good and _accepts(verify_invite, card, now=parse_exp(c["checkNow"]))
        out.append((c["name"], good))
    return out


def reject_invite(doc: dict[str, Any]) -> Cases:
    return [(c["name"], refused_with(_INVITE_CODES.get(c["category"]), verify_invite,
                                      c["input"], now=parse_exp(c["checkNow"])))
            for c in doc["reject"]["invite"]]


def reject_claim(doc: dict[str, Any]) -> Cases:
    """Signature first: an unsigned claim is refused on its signature; a signed one must
    still present a nonce this inviter issued (here: none was issued)."""
    out: Cases = []

    def nothing_issued(claim: Claim) -> None:
        raise Refused("unknown-nonce", f"no invite with nonce {claim.nonce[:40]!r} was issued "
                                       "here")

    def judge(c: dict[str, Any]) -> None:
        message = c["input"]["message"]
        accept_claim(c["input"], inviter_did=c.get("recipientDid", message["to"]),
                     now=message["timestamp"], spend=nothing_issued)

    for c in doc["reject"]["claim"]:
        code = {"claim-unsigned": "signature",
                "claim-unknown-nonce": "unknown-nonce"}.get(c["category"])
        out.append((c["name"], refused_with(code, judge, c)))
    return out


RUNNERS: dict[str, Callable[[dict[str, Any]], Cases]] = {
    "binding": binding_v1,
    "bindingV2": binding_v2,
    "ownerState": owner_state,
    "invite": invite,
    "reject.invite": reject_invite,
    "reject.claim": reject_claim,
    "reject.keystate": reject_keystate,
}
