"""Attacker-shaped input at every boundary: only ``MuretaiError`` comes out, nothing is accepted.

Bounded runs (a few hundred examples each, no deadline) keep the whole file to a few seconds.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from muretai_cli.artifacts.grant import GRANT_TYP, check_grant, check_redeem
from muretai_cli.artifacts.message import envelope_of
from muretai_cli.artifacts.org import ORG_TYP, check_membership
from muretai_cli.errors import MuretaiError
from muretai_cli.seam import (
    SigningKey,
    parse_document,
    public_from_did,
    sign_envelope,
    verify_card_envelope,
    verify_envelope,
)

BOUNDED = settings(max_examples=200, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SMALL = settings(max_examples=100, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

ME = SigningKey(bytes([7]) * 32)
PEER = SigningKey(bytes([8]) * 32)
NOW = 1784273681
HONEST = sign_envelope(PEER, to=ME.did, text="hi", timestamp=NOW, message_id="m1")

# Strings that reach the interesting branches more often than random text would.
_TOKENS = st.sampled_from([
    ME.did, PEER.did, HONEST["sig"], "did:key:z", "did:key:z6Mk", "agentcard", "message",
    "message/send", "text", "file", GRANT_TYP, ORG_TYP, "", "\ud800", "AAAA", "====",
    "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
])
_KEYS = st.sampled_from([
    "from", "to", "messageId", "contextId", "text", "timestamp", "sig", "v", "typ", "card",
    "ts", "did", "id", "uses", "iat", "exp", "purpose", "orgDid", "agentDid", "orgName",
    "role", "jsonrpc", "method", "params", "message", "result", "kind", "parts", "metadata",
    "replyTo", "grant",
]) | st.text(max_size=8)
_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=40) | _TOKENS)
JSONISH = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=8),
    max_leaves=12,
)
# Objects whose values stay small: generation, not the code under test, dominated the time.
_LEAFY = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=4,
)
OBJECTS = st.dictionaries(_KEYS, _LEAFY, max_size=6)


def _only_refusals(fn: Any, *args: Any, **kwargs: Any) -> None:
    """Call ``fn``; it must raise a MuretaiError (never return, never raise anything else)."""
    try:
        fn(*args, **kwargs)
    except MuretaiError:
        return
    raise AssertionError(f"{getattr(fn, '__name__', fn)} accepted attacker input")


def _json_bytes(value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (ValueError, TypeError):
        return b"{}"


# -- the parse boundary ---------------------------------------------------------------------

@BOUNDED
@given(st.binary(max_size=512))
def test_parse_document_arbitrary_bytes(raw: bytes) -> None:
    with contextlib.suppress(MuretaiError):
        parse_document(raw)


@BOUNDED
@given(JSONISH)
def test_parse_document_json_shaped_bytes(value: Any) -> None:
    """Near-JSON (surrogates as raw bytes, NaN, huge ints) is refused or parsed, never a crash."""
    raw = _json_bytes(value)
    try:
        out = parse_document(raw)
    except MuretaiError:
        return
    from muretai_cli.seam import canonical_bytes

    canonical_bytes(out)  # whatever the boundary lets through can be canonicalised


@BOUNDED
@given(st.binary(max_size=64), st.binary(max_size=64))
def test_parse_document_mutated_documents(prefix: bytes, suffix: bytes) -> None:
    raw = prefix + b'{"s":"\\ud83d\\udc26","n":1}' + suffix
    with contextlib.suppress(MuretaiError):
        parse_document(raw)


@SMALL
@given(st.text(max_size=80) | st.builds(lambda s: "did:key:z" + s, st.text(max_size=80)))
def test_public_from_did_garbage(text: str) -> None:
    with contextlib.suppress(MuretaiError):
        public_from_did(text)


# -- verifiers: refuse, by name, whatever arrives ---------------------------------------------

@BOUNDED
@given(JSONISH)
def test_verify_envelope_arbitrary(value: Any) -> None:
    _only_refusals(verify_envelope, value, to_did=ME.did)


@BOUNDED
@given(st.dictionaries(st.sampled_from(
    ["contextId", "from", "messageId", "text", "timestamp", "to", "sig"]), JSONISH, max_size=7))
def test_verify_envelope_mutated_honest(over: dict[str, Any]) -> None:
    """An honest envelope with any of its fields replaced by anything is refused, unless the
    replacement changed nothing signed (then it must still verify as the honest message)."""
    env = {**HONEST, **over}
    try:
        fields = verify_envelope(env, to_did=ME.did)
    except MuretaiError:
        return
    assert {k: HONEST[k] for k in fields} == fields
    assert env["sig"] == HONEST["sig"]


@BOUNDED
@given(JSONISH)
def test_verify_card_envelope_arbitrary(value: Any) -> None:
    _only_refusals(verify_card_envelope, value, expected_did=ME.did)


@BOUNDED
@given(OBJECTS, OBJECTS, JSONISH)
def test_verify_card_envelope_shaped(card: dict[str, Any], extra: dict[str, Any],
                                     ts: Any) -> None:
    env = {**extra, "v": 1, "typ": "agentcard", "card": {**card, "did": ME.did}, "ts": ts}
    _only_refusals(verify_card_envelope, env, expected_did=ME.did)


@BOUNDED
@given(JSONISH)
def test_check_grant_arbitrary(value: Any) -> None:
    _only_refusals(check_grant, value, for_did=ME.did, now=NOW)


@BOUNDED
@given(OBJECTS)
def test_check_grant_shaped(body: dict[str, Any]) -> None:
    grant = {"typ": GRANT_TYP, "did": ME.did, "id": "x" * 22, "uses": 1, "iat": NOW,
             "exp": NOW + 60, **body}
    _only_refusals(check_grant, grant, for_did=ME.did, now=NOW)


@SMALL
@given(JSONISH)
def test_check_redeem_arbitrary(value: Any) -> None:
    _only_refusals(check_redeem, value, door_did=ME.did, now=NOW)


@BOUNDED
@given(JSONISH)
def test_check_membership_arbitrary(value: Any) -> None:
    _only_refusals(check_membership, value, agent_did=ME.did, now=NOW)


@BOUNDED
@given(OBJECTS)
def test_check_membership_shaped(body: dict[str, Any]) -> None:
    doc = {"typ": ORG_TYP, "orgDid": PEER.did, "agentDid": ME.did, "orgName": "Org",
           "iat": NOW, **body}
    _only_refusals(check_membership, doc, agent_did=ME.did, now=NOW)


# -- reading A2A messages ---------------------------------------------------------------------

@BOUNDED
@given(JSONISH)
def test_envelope_of_arbitrary(value: Any) -> None:
    """``envelope_of`` only reads; whatever it returns must then be refused by the verifier."""
    try:
        env = envelope_of(value)
    except MuretaiError:
        return
    _only_refusals(verify_envelope, env, to_did=ME.did)


@BOUNDED
@given(OBJECTS, OBJECTS)
def test_envelope_of_request_shaped(message: dict[str, Any], meta: dict[str, Any]) -> None:
    doc = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
           "params": {"message": {**message, "metadata": meta}}}
    try:
        env = envelope_of(doc)
    except MuretaiError:
        return
    _only_refusals(verify_envelope, env, to_did=ME.did)
