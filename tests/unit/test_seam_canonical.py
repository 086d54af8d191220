"""Canonical bytes, the parse boundary, and what a signer must never emit (seam §1)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from muretai_cli.errors import InputError, MuretaiError, Refused
from muretai_cli.seam import (
    MAX_SAFE_INT,
    SigningKey,
    canonical_bytes,
    canonical_from_json,
    check_signable,
    parse_document,
    sign_card_envelope,
    sign_envelope,
)
from muretai_cli.seam._limits import MAX_DEPTH
from tests.repo_files import cases

DOC = '{"b":1,"a":"日本","c":[true,null,"x/y\\u007f"]}'.encode()
RECIPIENT = SigningKey(bytes([7]) * 32).did


def _code(raw: bytes) -> str:
    with pytest.raises(InputError) as info:
        parse_document(raw)
    return info.value.code


# -- canonical bytes ------------------------------------------------------------------------

def test_canonical_form() -> None:
    value = {"b": 1, "a": "日本\n\x01", "é": "/", "A": [1, -2, 0], "z": None, "t": True}
    assert canonical_bytes(value) == (
        '{"A":[1,-2,0],"a":"日本\\n\\u0001","b":1,"t":true,"z":null,"é":"/"}'.encode())


def test_keys_sort_by_code_point_not_utf16() -> None:
    # U+FF21 sorts before U+1F426 by code point; by UTF-16 units it would sort after.
    value = {"\U0001f426": 1, "\uff21": 2}
    assert canonical_bytes(value) == '{"Ａ":2,"🐦":1}'.encode()


def test_no_unicode_normalisation() -> None:
    composed, decomposed = "\u00e9", "e\u0301"
    assert canonical_bytes({"s": composed}) != canonical_bytes({"s": decomposed})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_canonical_refuses_non_finite(value: float) -> None:
    with pytest.raises(Refused) as info:
        canonical_bytes({"x": value})
    assert info.value.code == "non-finite-number"


def test_canonical_refuses_lone_surrogate_in_value_and_key() -> None:
    for value in ({"s": "\ud800"}, {"\udfff": 1}):
        with pytest.raises(Refused) as info:
            canonical_bytes(value)
        assert info.value.code == "lone-surrogate"


def test_canonical_refuses_non_json() -> None:
    with pytest.raises(Refused) as info:
        canonical_bytes({"x": b"bytes"})
    assert info.value.code == "not-json"


# -- the parse boundary ---------------------------------------------------------------------

def test_plain_document_is_accepted() -> None:
    assert parse_document(DOC) == {"b": 1, "a": "日本", "c": [True, None, "x/y\x7f"]}
    assert canonical_from_json(DOC) == '{"a":"日本","b":1,"c":[true,null,"x/y\x7f"]}'.encode()


def test_bom_refused_while_the_unmarked_document_is_accepted() -> None:
    assert parse_document(DOC)
    assert _code(b"\xef\xbb\xbf" + DOC) == "bom"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_without_bom_refused(encoding: str) -> None:
    raw = DOC.decode().encode(encoding)
    assert not raw.startswith((b"\xff\xfe", b"\xfe\xff"))
    assert _code(raw) in ("not-utf8", "invalid-utf8")


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_utf16_and_utf32_with_bom_refused_by_name(encoding: str) -> None:
    raw = "\ufeff".encode(encoding) + DOC.decode().encode(encoding)
    with pytest.raises(InputError) as info:
        parse_document(raw)
    assert info.value.code == "not-utf8" and "UTF-16" in info.value.detail


def test_utf16le_of_a_short_ascii_document_refused() -> None:
    """The NUL sniff names this one: ASCII in UTF-16LE is ASCII bytes and NULs, which a
    strict UTF-8 decode accepts (NUL is valid UTF-8); without the sniff it would be
    reported as mere bad JSON rather than as the wrong encoding."""
    assert _code('"a"'.encode("utf-16-le")) == "not-utf8"


@pytest.mark.parametrize(("name", "raw", "code"), [
    ("truncated-sequence", b'{"s":"\xe6\x97"}', "invalid-utf8"),
    ("stray-continuation", b'{"s":"\x80"}', "invalid-utf8"),
    ("cesu-8-surrogate", b'{"s":"\xed\xa0\x80"}', "invalid-utf8"),
    ("overlong-slash", b'{"s":"\xc0\xaf"}', "invalid-utf8"),
    ("latin-1", '{"s":"é"}'.encode("latin-1"), "invalid-utf8"),
    ("lone-high-escape", b'{"s":"\\ud800"}', "lone-surrogate"),
    ("lone-low-escape", b'{"s":"\\uDFFF"}', "lone-surrogate"),
    ("lone-in-key", b'{"\\ud800":"x"}', "lone-surrogate"),
    ("lone-in-nested-key", b'{"a":[{"\\uDbFf":1}]}', "lone-surrogate"),
    ("reversed-pair", b'{"s":"\\udc00\\ud800"}', "lone-surrogate"),
    ("nan", b'{"x":NaN}', "non-finite-number"),
    ("infinity", b'{"x":-Infinity}', "non-finite-number"),
    ("overflowing-literal", b'{"x":1e400}', "non-finite-number"),  # a float, yet inf
    ("overflowing-negative", b'[-1.5E+999]', "non-finite-number"),
    ("truncated", b'{"s":"x"', "invalid-json"),
    ("empty", b"", "invalid-json"),
    ("trailing-garbage", b'{"s":1} x', "invalid-json"),
    ("deep", b"[" * 100_000 + b"]" * 100_000, "too-deep"),
])
def test_parse_boundary_refusals(name: str, raw: bytes, code: str) -> None:
    assert _code(raw) == code, name


def _at_stack_depth(frames: int, fn: Any) -> Any:
    """Call ``fn`` with ``frames`` extra Python frames beneath it (a CLI, a web handler)."""
    return fn() if frames == 0 else _at_stack_depth(frames - 1, fn)


def _nested(depth: int) -> bytes:
    return b'{"a":' * (depth // 2) + b"[" * (depth - depth // 2) + b"1" + \
        b"]" * (depth - depth // 2) + b"}" * (depth // 2)


def test_nesting_limit_is_a_fixed_number() -> None:
    assert MAX_DEPTH == 128
    parse_document(_nested(MAX_DEPTH))
    assert _code(_nested(MAX_DEPTH + 1)) == "too-deep"
    assert "128" in _refusal_detail(_nested(MAX_DEPTH + 1))


def _refusal_detail(raw: bytes) -> str:
    with pytest.raises(InputError) as info:
        parse_document(raw)
    return info.value.detail


def test_nesting_answer_does_not_depend_on_the_callers_stack() -> None:
    """Found by testing: a document ~976 deep parsed at a shallow stack, then crashed
    ``canonical_bytes`` with RecursionError a few frames deeper (``muretai verify card``
    printed a traceback). Now the boundary answers the same everywhere, and whatever it
    lets through can be encoded again from deep inside a caller."""
    for depth in (MAX_DEPTH + 1, 976, 5000):
        for frames in (0, 100, 400):
            assert _at_stack_depth(frames, lambda d=depth: _code(_nested(d))) == "too-deep"
    ok = parse_document(_nested(MAX_DEPTH))
    assert _at_stack_depth(700, lambda: canonical_bytes(ok)).count(b"[") == MAX_DEPTH // 2


def test_wide_but_shallow_documents_pass_the_depth_check() -> None:
    wide = b"[" + b",".join([b'{"a":[1,{"b":[]}]}'] * 2000) + b"]"
    assert len(parse_document(wide)) == 2000
    assert parse_document(b'["' + b"[" * 1000 + b'"]') == ["[" * 1000]  # brackets in a string


def test_canonical_bytes_refuses_by_name_what_it_cannot_nest() -> None:
    value: Any = 1
    for _ in range(5000):
        value = [value]
    with pytest.raises(Refused) as info:
        canonical_bytes(value)
    assert info.value.code == "too-deep"


def test_a_well_formed_pair_is_one_character_either_way() -> None:
    escaped = parse_document(b'{"s":"\\ud83d\\udc26"}')
    literal = parse_document('{"s":"🐦"}'.encode())
    assert escaped == literal == {"s": "🐦"}
    assert canonical_bytes(escaped) == canonical_bytes(literal)


def test_literal_replacement_character_is_accepted() -> None:
    assert parse_document('{"s":"\ufffd"}'.encode()) == {"s": "\ufffd"}


def test_finite_floats_still_parse() -> None:
    """The verifier must see a float to call it float-in-payload; only infinity is refused."""
    assert parse_document(b"[1.5,1e308,-0.0,1e-400]") == [1.5, 1e308, -0.0, 0.0]


def test_duplicate_keys_last_wins() -> None:
    assert parse_document(b'{"a":1,"a":2}') == {"a": 2}


def test_parse_boundary_takes_bytes_only() -> None:
    with pytest.raises(InputError):
        parse_document('{"a":1}')  # type: ignore[arg-type]
    assert parse_document(bytearray(b"[1]")) == [1]  # type: ignore[arg-type]


def test_huge_integer_literal_is_an_input_error_not_a_crash() -> None:
    with pytest.raises(MuretaiError):
        parse_document(b"1" * 100_000)


# -- numbers a signer must never emit -------------------------------------------------------

@pytest.mark.parametrize("value", [
    MAX_SAFE_INT, -MAX_SAFE_INT, 0, True, False, None, "1.5", {"a": [1, {"b": "x"}]},
])
def test_check_signable_accepts(value: Any) -> None:
    check_signable(value)


@pytest.mark.parametrize(("value", "code", "where"), [
    (1.0, "float-in-payload", "$"),
    ({"trustLevel": 1.0}, "float-in-payload", "$.trustLevel"),
    ({"a": [0, {"b": 0.5}]}, "float-in-payload", "$.a[1].b"),
    (MAX_SAFE_INT + 1, "int-out-of-range", "$"),
    (-MAX_SAFE_INT - 1, "int-out-of-range", "$"),
    ({"n": 2**64}, "int-out-of-range", "$.n"),
    ({"x": b"raw"}, "not-json", "$.x"),
])
def test_check_signable_refuses(value: Any, code: str, where: str) -> None:
    with pytest.raises(Refused) as info:
        check_signable(value)
    assert info.value.code == code
    assert info.value.detail.startswith(where + " ")


def test_sign_envelope_refuses_float_and_huge_timestamps() -> None:
    key = SigningKey(bytes(32))
    for stamp, code in ((1784273681.0, "float-in-payload"), (2**53, "int-out-of-range")):
        with pytest.raises(Refused) as info:
            sign_envelope(key, to=RECIPIENT, text="hi", timestamp=stamp)  # type: ignore[arg-type]
        assert info.value.code == code


@pytest.mark.parametrize(("card", "ts", "code"), [
    ({"name": "n", "trustLevel": 1.0}, 1, "float-in-payload"),
    ({"name": "n", "n": 2**53}, 1, "int-out-of-range"),
    ({"name": "n"}, 1.0, "float-in-payload"),
    ({"name": "n"}, 2**53, "int-out-of-range"),
])
def test_sign_card_envelope_refuses_unsignable_numbers(card: dict[str, Any], ts: Any,
                                                       code: str) -> None:
    with pytest.raises(Refused) as info:
        sign_card_envelope(SigningKey(bytes(32)), card, ts)
    assert info.value.code == code


def test_number_hazards_are_refused_by_the_signer(wire_vectors: dict[str, Any]) -> None:
    hazards = [c for c in wire_vectors["numberHazards"] if c.get("signMustNotEmit")]
    assert hazards
    for case in hazards:
        with pytest.raises(Refused):
            check_signable(case["payload"])
        # and Python's own bytes for them are what the vectors say (so a verifier could)
        assert canonical_bytes(case["payload"]) == case["pythonCanonical"].encode(), case["name"]


def test_canonical_vectors_survive_the_parse_boundary(wire_vectors: dict[str, Any]) -> None:
    for case in cases(wire_vectors["canonical"], "canonical"):
        raw = json.dumps(case["payload"], ensure_ascii=True).encode()
        assert canonical_from_json(raw) == case["canonical"].encode(), case["name"]
