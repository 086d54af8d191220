"""The common-shape path of ``verify_introduction`` (``_verify_common``, artifacts/
introduction.py) held to the general path: the same signed bytes, byte for byte, for the
credential and its embedded request; the same verdict -- the same reason, worded alike, or
an equal ``Introduction`` -- on hostile credentials; the reference's one date spelling read
as ``parse_iso`` reads it; any other shape declined before a signature is checked; and no
signature checked twice on the way to a refusal.

A ``MappingProxyType`` of a credential is a ``Mapping`` but not a dict, so it always takes
the general path: the same document both ways is the comparison."""

from __future__ import annotations

import copy
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import muretai_cli.artifacts.introduction as intro
from muretai_cli.artifacts._intro_values import iso_seconds
from muretai_cli.artifacts.introduction import (
    Introduction,
    mint_introduction,
    parse_iso,
    signed_digest,
    signing_payload,
    verify_introduction,
)
from muretai_cli.errors import Refused
from muretai_cli.seam import canonical_bytes, six_fields
from tests.intro_cases import signatures_checked
from tests.intro_recipe import (
    ALICE,
    BOB,
    CAROL,
    DAY,
    MALLORY,
    NOW,
    recipe_credential,
    recipe_request,
    requested,
    resign,
)

Outcome = Introduction | tuple[str, str]


def _outcome(doc: object, now: int, revoked: Any, verified: str | None) -> Outcome:
    try:
        return verify_introduction(doc, subject=CAROL.did, recipient=BOB.did, now=now,
                                   revoked=revoked, verified=verified)
    except Refused as exc:
        return exc.code, exc.detail


def _both(vc: dict[str, Any], *, now: int = NOW, revoked: Any = (),
          verified: str | None = None) -> tuple[Outcome, Outcome]:
    """(as a plain dict: the common-shape path where it applies; as a read-only mapping:
    always the general path)."""
    return (_outcome(vc, now, revoked, verified),
            _outcome(MappingProxyType(vc), now, revoked, verified))


def _bases() -> dict[str, Callable[[], dict[str, Any]]]:
    return {
        "requested": requested,
        "requested, endpoint": lambda: requested(endpoint="https://alice.example"),
        "proactive": lambda: mint_introduction(ALICE, subject=CAROL.did, to=BOB.did,
                                               now=NOW - 60, expertise=["rust", "go"]),
        "proactive, endpoint": lambda: mint_introduction(
            ALICE, subject=CAROL.did, to=BOB.did, now=NOW - 60, trust=0,
            issuer_endpoint="https://alice.example"),
        "ours, requested": lambda: mint_introduction(
            ALICE, subject=CAROL.did, to=BOB.did, now=NOW - 60,
            request=recipe_request(CAROL.seed, ALICE.did, BOB.did, NOW - DAY)),
    }


BASES = _bases()


def _fast(vc: dict[str, Any], *, now: int = NOW, revoked: Any = ()) -> Introduction | None:
    return intro._verify_common(vc, CAROL.did, BOB.did, now, revoked, None)


# -- the common shape takes the fast path, and answers as the general one -----------------

@pytest.mark.parametrize("base", sorted(BASES))
def test_the_common_shapes_take_the_fast_path_and_agree(base: str) -> None:
    vc = BASES[base]()
    with signatures_checked() as seen:
        fast = _fast(vc)
    assert fast is not None
    assert len(seen) == (2 if "requested" in base else 1)
    fast_again, general = _both(vc)
    assert fast == fast_again == general
    assert isinstance(fast, Introduction)
    assert fast.provenance.mode == ("requested" if "requested" in base else "proactive")


def test_the_fast_path_builds_frozen_values_equal_to_public_construction() -> None:
    got = _fast(requested())
    assert got is not None
    rebuilt = Introduction(got.id, got.issuer, got.subject, got.introduced_to, got.expertise,
                           got.trust_bp, got.issued_at, got.valid_until, got.provenance,
                           got.issuer_endpoint, got.doc)
    assert rebuilt == got
    with pytest.raises(AttributeError):
        got.trust_bp = 1000  # type: ignore[misc]
    with pytest.raises(TypeError):
        got.doc["issuer"] = MALLORY.did  # type: ignore[index]
    with pytest.raises(ValueError, match=r"0\.\.1000"):  # public construction still checks
        Introduction(got.id, got.issuer, got.subject, got.introduced_to, got.expertise, 1001,
                     got.issued_at, got.valid_until, got.provenance, got.issuer_endpoint,
                     got.doc)


# -- the same verdict on hostile credentials ----------------------------------------------

_REQUEST_KEYS = ("contextId", "from", "messageId", "sig", "text", "timestamp", "to")
_PLACES: list[tuple[str, ...]] = [("proof", "jws")]
_PLACES += [(k,) for k in ("id", "type", "issuer", "issuanceDate", "issuerEndpoint",
                           "provenance", "proof", "credentialSubject", "extra")]
_PLACES += [("credentialSubject", k) for k in ("id", "introducedTo", "expertise",
                                               "trustLevelBp", "validUntil", "extra")]
_PLACES += [("provenance", k) for k in ("mode", "request", "extra")]
_PLACES += [("provenance", "request", k) for k in (*_REQUEST_KEYS, "keystate", "extra")]
_KEYS = {d.did: d for d in (ALICE, BOB, CAROL, MALLORY)}
_DIDS = sorted(_KEYS)
_DELETE = object()


def _dates() -> st.SearchStrategy[str]:
    spelled = st.integers(NOW - 60 * DAY, NOW + 60 * DAY).map(
        lambda t: datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    other = st.sampled_from(["2027-01-15T08:00:00.000Z", "2027-01-15T08:00:00+00:00",
                             "2027-01-15T08:00:00", "2027-02-30T08:00:00Z",
                             "2027-01-15T24:00:00Z", "2027-01-15 08:00:00Z",
                             "\u0662027-01-15T08:00:00Z", "2027-01-15T08:00:60Z",
                             "+027-01-15T08:00:00Z", "2027-01-15t08:00:00z"])
    return spelled | other


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 1002), st.floats(allow_nan=False, max_value=2e3),
    st.integers(NOW - 40 * DAY, NOW + DAY), st.integers(2**53 - 2, 2**53 + 1),
    st.text(max_size=12), st.sampled_from(_DIDS), _dates(),
    st.sampled_from(["requested", "proactive", "gifted", "", "A" * 86 + "==",
                     "introduce-me-to:" + BOB.did, "introduce-me-to:" + MALLORY.did,
                     "introduce-me-to: ", "https://alice.example", "x" * 2049,
                     "\ud800"]),
    st.lists(st.text(max_size=6) | st.integers(), max_size=3),
    st.lists(st.sampled_from(["VerifiableCredential", "AgentIntroduction"]), max_size=3),
    st.dictionaries(st.sampled_from(["mode", "request", "epoch"]), st.none() | st.text(),
                    max_size=2),
    st.just(_DELETE))


def _mutate(vc: dict[str, Any], place: tuple[str, ...], value: Any) -> None:
    target: Any = vc
    for step in place[:-1]:
        target = target.get(step) if isinstance(target, dict) else None
    if not isinstance(target, dict):
        return
    if value is _DELETE:
        target.pop(place[-1], None)
    else:
        target[place[-1]] = copy.deepcopy(value)


def _resign_request(vc: dict[str, Any]) -> None:
    """Sign the (mutated) embedded request again, where it still has six fields: by the
    party its ``from`` names (CAROL when it names none of them)."""
    prov = vc.get("provenance")
    record = prov.get("request") if isinstance(prov, dict) else None
    if not isinstance(record, dict):
        return
    with suppress(Refused):
        signer = _KEYS.get(str(record.get("from")), CAROL)
        record["sig"] = signer.sign(canonical_bytes(six_fields(record)))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(BASES)),
       st.lists(st.tuples(st.sampled_from(_PLACES), _VALUES), max_size=3),
       st.booleans(), st.booleans(),
       st.sampled_from([NOW, NOW - 30 * DAY, NOW + 29 * DAY, NOW + 31 * DAY]),
       st.sampled_from(["none", "this id", "other id", "predicate"]),
       st.sampled_from([None, "the base's", "its own"]))
def test_the_fast_path_gives_the_general_verdict_on_hostile_credentials(
        base: str, changes: list[tuple[tuple[str, ...], Any]], sign_request: bool,
        sign_again: bool, now: int, revocation: str, digest: str | None) -> None:
    vc = BASES[base]()
    cid, verified = vc["id"], signed_digest(vc) if digest == "the base's" else None
    for place, value in changes:
        _mutate(vc, place, value)
    if sign_request:
        _resign_request(vc)
    if sign_again:
        with suppress(UnicodeEncodeError, TypeError, ValueError, KeyError):
            vc = resign(vc, ALICE.seed)  # (not signable the recipe's way: verified as it is)
    revoked: Any = {"none": (), "this id": {cid}, "other id": {"urn:uuid:other"},
                    "predicate": lambda i: i == cid}[revocation]
    if digest == "its own":  # as if verified before: the equations are skipped, not the rest
        with suppress(Refused):
            verified = signed_digest(vc)
    fast, general = _both(vc, now=now, revoked=revoked, verified=verified)
    assert fast == general


@pytest.mark.parametrize("build", sorted(BASES))
@pytest.mark.parametrize("spoil", ["expired", "revoked", "wrong-recipient", "long endpoint"])
def test_a_refusal_after_the_signatures_checks_no_signature_twice(build: str,
                                                                  spoil: str) -> None:
    vc, now, revoked = BASES[build](), NOW, set()
    if spoil == "expired":
        now += 31 * DAY
    elif spoil == "revoked":
        revoked = {vc["id"]}
    elif spoil == "wrong-recipient":
        vc["credentialSubject"]["introducedTo"] = MALLORY.did
    else:
        vc["issuerEndpoint"] = "https://alice.example/" + "x" * 2048
    vc = resign(vc, ALICE.seed)
    with signatures_checked() as seen:
        fast, general = _both(vc, now=now, revoked=revoked)
    assert fast == general and isinstance(fast, tuple)
    assert fast[0] == {"long endpoint": "malformed"}.get(spoil, spoil)
    asked = 2 if "requested" in build and spoil in ("revoked", "long endpoint") else 1
    assert len(seen) == 2 * asked  # each path checked each signature once, at most


def test_a_forged_request_on_the_fast_path_is_refused_as_on_the_general_one() -> None:
    vc = requested()
    record = vc["provenance"]["request"]
    for key, value in (("text", record["text"] + " "), ("timestamp", record["timestamp"] + 1),
                       ("contextId", "c-other"), ("sig", "A" * 86 + "=="),
                       ("messageId", "m-other")):
        forged = copy.deepcopy(vc)
        forged["provenance"]["request"][key] = value
        forged = resign(forged, ALICE.seed)
        fast, general = _both(forged)
        assert fast == general and isinstance(fast, tuple) and fast[0] == "bad-provenance", key


# -- any other shape is declined before a signature is checked ----------------------------

class _Str(str):
    __slots__ = ()


_OTHER_SHAPES: dict[str, Callable[[dict[str, Any]], None]] = {
    "extra top key": lambda vc: vc.update(note="x"),
    "null endpoint": lambda vc: vc.update(issuerEndpoint=None),
    "extra claim": lambda vc: vc["credentialSubject"].update(note="x"),
    "bool trust": lambda vc: vc["credentialSubject"].update(trustLevelBp=True),
    "float trust": lambda vc: vc["credentialSubject"].update(trustLevelBp=873.0),
    "str subclass id": lambda vc: vc.update(id=_Str(vc["id"])),
    "non-str expertise": lambda vc: vc["credentialSubject"].update(expertise=[1]),
    "lone surrogate": lambda vc: vc["credentialSubject"].update(expertise=["\ud800"]),
    "empty id": lambda vc: vc.update(id=""),
    "long id": lambda vc: vc.update(id="u" * 257),
    "tuple type": lambda vc: vc.update(type=tuple(vc["type"])),
    "no AgentIntroduction": lambda vc: vc.update(type=["VerifiableCredential"]),
    "proof a mapping": lambda vc: vc.update(proof=MappingProxyType(vc["proof"])),
    "no provenance": lambda vc: vc.pop("provenance"),
    "extra in provenance": lambda vc: vc["provenance"].update(note="x"),
    "keystate": lambda vc: vc["provenance"]["request"].update(keystate={"epoch": 1}),
    "float stamp": lambda vc: vc["provenance"]["request"].update(timestamp=1.5),
    "bool stamp": lambda vc: vc["provenance"]["request"].update(timestamp=True),
    "string stamp": lambda vc: vc["provenance"]["request"].update(timestamp="1799990000"),
    "huge stamp": lambda vc: vc["provenance"]["request"].update(timestamp=2**53),
    "empty messageId": lambda vc: vc["provenance"]["request"].update(messageId=""),
    "str subclass text": lambda vc: vc["provenance"]["request"].update(
        text=_Str(vc["provenance"]["request"]["text"])),
    "no contextId": lambda vc: vc["provenance"]["request"].pop("contextId"),
    "no sig": lambda vc: vc["provenance"]["request"].pop("sig"),
    "request a mapping": lambda vc: vc["provenance"].update(
        request=MappingProxyType(vc["provenance"]["request"])),
    "a quote in expertise": lambda vc: vc["credentialSubject"].update(expertise=['"go"']),
    "a backslash in the id": lambda vc: vc.update(id="urn:\\x"),
    "a newline in the request": lambda vc: vc["provenance"]["request"].update(
        text="introduce-me-to:\n" + BOB.did),
    "a control in the issuer": lambda vc: vc.update(issuer=vc["issuer"] + "\x1f"),
}


@pytest.mark.parametrize("change", sorted(_OTHER_SHAPES))
def test_any_other_shape_is_declined_before_a_signature_and_answered_alike(change: str) -> None:
    vc = requested()
    _OTHER_SHAPES[change](vc)
    with signatures_checked() as seen:
        assert _fast(vc) is None
    assert seen == []
    fast, general = _both(vc)
    assert fast == general


# -- the signed bytes, byte for byte ------------------------------------------------------

class _Seen(Exception):
    pass


_text = st.text(max_size=12)  # every code point but lone surrogates: escapes, quotes, bidi


def _escaped(*texts: str | None) -> bool:
    """Does the JSON string encoder escape a character of one of these?"""
    return any(c in '"\\' or c < " " for text in texts if text for c in text)


@settings(max_examples=400, deadline=None)
@given(_text, _text, _text, st.lists(_text, max_size=3), st.integers(-2**60, 2**60),
       st.sampled_from([None, "https://i.example/", "é\"\\\x7f\u2028", "a\u00e9\x7f"]),
       st.booleans(), st.one_of(st.none(), _text), st.integers(-2**53 + 1, 2**53 - 1), _text,
       st.text(min_size=1, max_size=12), _text, _text, _text)
def test_the_signed_bytes_of_the_common_shape_are_the_canonical_bytes(
        cid: str, until: str, issued: str, expertise: list[str], trust: int,
        endpoint: str | None, asked: bool, context: str | None, stamp: int,
        text: str, mid: str, sender: str, to: str, sig: str) -> None:
    vc = requested() if asked else mint_introduction(ALICE, subject=CAROL.did, to=BOB.did,
                                                      now=NOW)
    vc.update(id=cid or "u", issuanceDate=issued, issuer=sender)
    vc["credentialSubject"].update(validUntil=until, expertise=expertise, trustLevelBp=trust,
                                   id=to)
    if endpoint is not None:
        vc["issuerEndpoint"] = endpoint
    texts = [cid, until, issued, *expertise, endpoint, sender, to]
    if asked:
        vc["provenance"]["request"].update(contextId=context, timestamp=stamp, text=text,
                                           messageId=mid, sig=sig, to=to)
        texts += [context, text, mid, sig]
    with mock.patch.object(intro, "verifying_key_from_did", return_value=(None, b"")), \
            mock.patch.object(intro, "verify_strict", side_effect=_Seen) as checked:
        if _escaped(*texts):  # spelled by canonical_bytes: the general path's
            assert _fast(vc) is None and not checked.called
            return
        with pytest.raises(_Seen):
            _fast(vc)
    assert checked.call_args.args[2] == signing_payload(vc)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), _text), st.text(min_size=1, max_size=12),
       _text.filter(lambda t: not t.startswith("introduce-me-to:")) | st.just(
           "introduce-me-to:" + BOB.did), st.integers(NOW - 60 - 30 * DAY, NOW - 60 + 300))
def test_the_signed_bytes_of_the_embedded_request_are_its_canonical_six_fields(
        context: str | None, mid: str, text: str, stamp: int) -> None:
    vc = requested()
    record = vc["provenance"]["request"]
    record.update(contextId=context, messageId=mid, text=text, timestamp=stamp)
    with mock.patch.object(intro, "verify_strict", side_effect=[None, _Seen]) as checked:
        if _escaped(context, mid, text):
            assert _fast(vc) is None and not checked.called
            return
        with pytest.raises(_Seen):
            _fast(vc)  # the issuer's signature passes (stubbed); the request's is spelled
    assert checked.call_args.args[2] == canonical_bytes(six_fields(record))


# -- the reference's date spelling, read as parse_iso reads it ----------------------------

_ISO_CHARS = st.sampled_from([*"0123456789-T:Z+ .tz_\u0663\uff11\u00b2", "", "00"])


@settings(max_examples=1000, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
       st.lists(st.tuples(st.integers(0, 19), _ISO_CHARS | st.characters()), max_size=3))
def test_the_fast_date_reads_the_reference_spelling_as_parse_iso_and_nothing_else(
        when: datetime, edits: list[tuple[int, str]]) -> None:
    when = when.replace(microsecond=0)
    text = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    if when.year < 1000:
        text = f"{when.year:04d}" + text[text.index("-"):]
    for at, char in edits:
        text = text[:at] + char + text[at + 1:]
    try:
        general: float | None = parse_iso(text, "validUntil")
    except Refused:
        general = None
    fast = iso_seconds(text)
    assert fast is None or fast == general
    if not edits:
        assert fast is not None and fast == when.replace(tzinfo=UTC).timestamp()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=24))
def test_the_fast_date_never_reads_what_parse_iso_refuses(text: str) -> None:
    fast = iso_seconds(text)
    if fast is not None:
        assert parse_iso(text, "issuanceDate") == fast


def test_a_recipe_credential_in_another_date_spelling_takes_the_general_reading() -> None:
    vc = recipe_credential(ALICE.seed, CAROL.did, BOB.did, issued=NOW - 60, request=None)
    vc["credentialSubject"]["validUntil"] = "2027-02-01T08:00:00.000Z"  # NOW + 17 days
    vc = resign(vc, ALICE.seed)
    assert _fast(vc) is not None
    fast, general = _both(vc)
    assert fast == general and isinstance(fast, Introduction)
    assert fast.valid_until == parse_iso("2027-02-01T08:00:00.000Z", "validUntil")
