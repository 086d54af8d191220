"""Run a seam vectors file against this implementation, group by group.

Every group in the file is reported: passed, failed (with the failing cases named) or
skipped by name with the reason. A group nobody loops over never looks like one that passed.
A wire vectors file (one that states its ``protocolVersion``) that lacks a group muretai runs
has that group reported too, skipped as missing from the file: an older file is not a pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from muretai_cli.conformance.keys import RUNNERS as KEY_RUNNERS
from muretai_cli.conformance.keys import refused_with
from muretai_cli.conformance.web import RUNNERS as WEB_RUNNERS
from muretai_cli.conformance.web import is_wba_file
from muretai_cli.errors import MuretaiError
from muretai_cli.seam import (
    SigningKey,
    canonical_bytes,
    canonical_from_json,
    card_envelope_payload,
    check_signable,
    did_from_public,
    listen_token_payload,
    open_box,
    public_from_did,
    relay_send_payload,
    signing_payload,
    verify_card_envelope,
    verify_envelope,
    verify_listen_token,
    verify_relay_send,
)
from muretai_cli.urls import parse_base_url

__all__ = ["GroupResult", "Status", "keys", "missing_groups", "run_conformance", "web"]

Status = Literal["passed", "failed", "skipped"]
_NOT_GROUPS = {"note", "protocolVersion", "canonicalSpec", "timestampNote", "numberHazardNote",
               "ownerStateNote", "domainLinkageNote", "epochNote", "rejectNote", "_", "seed_hex",
               "authority", "now", "jwks"}


@dataclass
class GroupResult:
    group: str
    status: Status
    cases: int = 0
    failures: list[str] = field(default_factory=list)
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"group": self.group, "status": self.status, "cases": self.cases}
        if self.failures:
            out["failures"] = self.failures
        if self.reason:
            out["reason"] = self.reason
        return out


def _refused(fn: Callable[..., object], *args: Any, **kwargs: Any) -> bool:
    try:
        fn(*args, **kwargs)
    except MuretaiError:
        return True
    return False


def _canonical(doc: dict[str, Any]) -> list[tuple[str, bool]]:
    return [(c["name"], canonical_bytes(c["payload"]) == c["canonical"].encode())
            for c in doc["canonical"]]


def _number_hazards(doc: dict[str, Any]) -> list[tuple[str, bool]]:
    # signMustNotEmit: our signer must refuse every one of these payloads.
    return [(c["name"], not c.get("signMustNotEmit") or
             _refused(check_signable, c["payload"])) for c in doc["numberHazards"]]


def _did(doc: dict[str, Any]) -> list[tuple[str, bool]]:
    out = []
    for c in doc["did"]:
        curve, public = public_from_did(c["did"])
        out.append((c["did"], public.hex() == c["publicHex"]
                    and did_from_public(public, curve) == c["did"]))
    return out


def _envelope(doc: dict[str, Any]) -> list[tuple[str, bool]]:
    return [(c["name"], signing_payload(c) == c["signingPayload"].encode())
            for c in doc["envelope"]]


def _cardpub(doc: dict[str, Any]) -> list[tuple[str, bool]]:
    out = []
    for c in doc["cardpub"]:
        env = {"v": 1, "typ": "agentcard", "card": c["card"], "ts": c["ts"], "sig": c["sig"]}
        good = card_envelope_payload(c["card"], c["ts"]) == c["envelopePayload"].encode()
        good = good and verify_card_envelope(env, expected_did=c["card"]["did"]) == c["card"]
        other = "did:key:z6MkeTG3bFFSLYVU7VqhgZxqr6YzpaGrQtFMh1uvqGy1vDnP"
        good = good and _refused(verify_card_envelope, env, expected_did=other)
        out.append((c["name"], good))
    return out


# reject.did (seam §2): each case is one rule's refusal; its decoded bytes say which rule.
_DID_RULES: dict[str, Callable[[bytes], bool]] = {
    "wrong-multicodec": lambda raw: len(raw) == 34 and raw[:2] not in (b"\xed\x01",
                                                                       b"\x80\x24"),
    "wrong-length": lambda raw: raw[:2] == b"\xed\x01" and len(raw) != 34,
}
_DID_PREFIX = "did:key:z"


def _reject_did(cases: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    """The recipe's control first (the base58 decodes cleanly to ``decodedHex``, and those
    bytes break the case's own rule and only it), then the decoder must refuse the DID."""
    import base58

    out = []
    for c in cases:
        did, raw = c["did"], bytes.fromhex(c["decodedHex"])
        rule = _DID_RULES.get(c["category"])
        control = (did.startswith(_DID_PREFIX) and rule is not None and rule(raw)
                   and base58.b58decode(did[len(_DID_PREFIX):]) == raw)
        out.append((c["name"], control and refused_with("bad-did", public_from_did, did)))
    return out


def _reject_cardpub(cases: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    """Each envelope refused on its signature, under the ``expectedDid`` the CASE names
    (the caller's, at the top level), never a DID read out of the envelope."""
    return [(c["name"], refused_with("signature", verify_card_envelope, c["envelope"],
                                     expected_did=c["expectedDid"])) for c in cases]


def _reject_message(cases: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    out = []
    for c in cases:
        to = "" if c.get("verifierNamesNoRecipient") else c.get("recipientDid", c["input"]["to"])
        out.append((c["name"], _refused(verify_envelope, c["input"], to_did=to)))
    return out


def _reject_encoding(group: dict[str, Any]) -> list[tuple[str, bool]]:
    out = []
    if not group.get("refuse"):
        raise ValueError("the group has no refuse cases; an accept half alone proves nothing")
    for c in group["refuse"]:
        raw = bytes.fromhex(c["documentHex"])
        out.append((c["name"], _refused(canonical_from_json, raw)))
    for c in group.get("accept", []):
        raw = bytes.fromhex(c["documentHex"])
        try:
            ok = canonical_from_json(raw) == c["canonical"].encode()
        except MuretaiError:
            ok = False
        out.append((c["name"], ok))
    return out


def _cryptobox(doc: dict[str, Any]) -> list[tuple[str, bool]]:
    group = doc["cryptobox"]
    me = SigningKey(bytes.fromhex(group["recipientSeed"]))
    sender = SigningKey(bytes.fromhex(group["senderSeed"]))
    keys_ok = (me.enc_pub == group["recipientEncPub"]
               and sender.enc_pub == group["senderEncPub"])
    out = [("encPub", keys_ok)]
    # adHex is read with [] on purpose: a case without it fails the group, never defaults.
    for c in group["open"]:
        plain = open_box(me, group["senderEncPub"], c["blob"], ad=bytes.fromhex(c["adHex"]))
        out.append((f"open/{c['name']}", plain == bytes.fromhex(c["plaintextHex"])))
    if not group["mustNotOpen"]:
        raise ValueError("mustNotOpen is empty; the open half alone proves nothing")
    for c in group["mustNotOpen"]:
        plain = open_box(me, group["senderEncPub"], c["blob"], ad=bytes.fromhex(c["adHex"]))
        out.append((f"mustNotOpen/{c['name']}", plain is None))
    return out


def _relay(doc: dict[str, Any]) -> list[tuple[str, bool]]:
    """The bytes, the signature over them, and a refusal of the same signature elsewhere."""
    group = doc["relay"]
    out = []
    for c in group["send"]:
        good = relay_send_payload(c["to"], c["from"], c["id"], c["blob"]) == \
            c["sendSigMsg"].encode()
        good = good and not _refused(verify_relay_send, to=c["to"], sender=c["from"],
                                     deposit_id=c["id"], blob=c["blob"], sig=c["sig"])
        good = good and _refused(verify_relay_send, to=c["to"], sender=c["from"],
                                 deposit_id=c["id"] + "x", blob=c["blob"], sig=c["sig"])
        out.append((f"send/{c['name']}", good))
    for c in group["listen"]:
        origin = parse_base_url(c["relayUrl"], require_https=False).origin
        good = origin == c["origin"] and listen_token_payload(
            c["did"], c["minute"], origin) == c["listenTokenMsg"].encode()
        good = good and not _refused(verify_listen_token, did=c["did"], minute=c["minute"],
                                     token=c["token"], origin=origin)
        good = good and _refused(verify_listen_token, did=c["did"], minute=c["minute"] + 1,
                                 token=c["token"], origin=origin)
        out.append((f"listen/{c['name']}", good))
    return out


_RUNNERS: dict[str, Callable[[dict[str, Any]], list[tuple[str, bool]]]] = {
    "canonical": _canonical,
    "numberHazards": _number_hazards,
    "did": _did,
    "envelope": _envelope,
    "cardpub": _cardpub,
    "cryptobox": _cryptobox,
    "relay": _relay,
    "reject.message": lambda doc: _reject_message(doc["reject"]["message"]),
    "reject.encoding": lambda doc: _reject_encoding(doc["reject"]["encoding"]),
    "reject.did": lambda doc: _reject_did(doc["reject"]["did"]),
    "reject.cardpub": lambda doc: _reject_cardpub(doc["reject"]["cardpub"]),
    **WEB_RUNNERS,
    **KEY_RUNNERS,
}


# The groups of a wire vectors file that muretai runs (the wba file's two are its own).
_WIRE_GROUPS = tuple(name for name in _RUNNERS if not name.startswith("webBotAuth."))


def missing_groups(doc: dict[str, Any]) -> list[str]:
    """The groups muretai runs that a wire vectors file (one stating ``protocolVersion``)
    does not carry, in runner order; none for a wba file or a hand-made fragment."""
    if is_wba_file(doc) or "protocolVersion" not in doc:
        return []
    present = set(_groups(doc))
    return [name for name in _WIRE_GROUPS if name not in present]


def _groups(doc: dict[str, Any]) -> list[str]:
    """Every group the document holds. A name muretai runs is listed whatever its value, so
    a malformed group fails by name instead of vanishing; other non-containers are notes."""
    if is_wba_file(doc):
        return ["webBotAuth.accept", "webBotAuth.reject"]
    names: list[str] = []
    for key, value in doc.items():
        if key in _NOT_GROUPS or (key not in _RUNNERS and key != "reject"
                                  and not isinstance(value, list | dict)):
            continue
        if key == "reject" and not isinstance(value, dict):
            names.append("reject")
            continue
        if key == "reject" and isinstance(value, dict):
            names.extend(f"reject.{sub}" for sub in value)
        elif key in ("accept", "reject") and isinstance(value, list):
            names.append(f"webBotAuth.{key}")
        else:
            names.append(key)
    return names


def run_conformance(doc: object) -> list[GroupResult]:
    """Each group of a vectors document, run or skipped by name."""
    if not isinstance(doc, dict):
        raise MuretaiError("not-vectors", "a vectors file is a JSON object of groups")
    results: list[GroupResult] = []
    for name in _groups(doc):
        runner = _RUNNERS.get(name)
        if name == "reject":
            results.append(GroupResult(name, "failed", failures=["reject is not an object of "
                                                                 "groups"]))
            continue
        if runner is None:
            results.append(GroupResult(name, "skipped",
                                       reason="not implemented by muretai (no issue asks)"))
            continue
        try:
            cases = runner(doc)
        except Exception as exc:  # a malformed vectors file is a failed group, never a crash
            results.append(GroupResult(name, "failed", failures=[
                f"group unreadable: {type(exc).__name__}: {str(exc)[:200]}"]))
            continue
        if not cases:
            results.append(GroupResult(name, "failed", failures=[
                "the group holds no cases; a group with nothing to check proves nothing"]))
            continue
        failures = [case for case, ok in cases if not ok]
        results.append(GroupResult(name, "failed" if failures else "passed", len(cases),
                                   failures))
    results.extend(GroupResult(name, "skipped", reason="missing from the file (muretai runs "
                               "it; newer seam vectors carry it)")
                   for name in missing_groups(doc))
    return results
