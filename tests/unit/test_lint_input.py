"""Shapes in all three places of a result, and the three input forms (JSONL, array, one value)."""

from __future__ import annotations

import io
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from muretai_cli.lint import lint_bytes, lint_stream

GATE = {"ok": False, "needsHumanConfirmation": True, "origin": "https://a.example",
        "requestId": "req-1", "message": "Please confirm.", "agentHint": "Wait for them."}
INFO = {"ok": False, "needsInformation": True, "origin": "https://a.example",
        "question": "Which size?", "message": "One more detail.", "agentHint": "Ask it."}
HANDOFF = {"v": 1, "next": [{"kind": "ui", "url": "https://a.example/chat"}]}
ENTRIES = [{"origin": "human-direct", "text": "hello"}]


def shapes(raw: bytes) -> list[tuple[str, str]]:
    return [(s.kind, s.path) for s in lint_bytes(raw).shapes]


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


def test_shapes_at_the_top_level() -> None:
    assert shapes(dumps(GATE)) == [("gate", "$")]
    assert shapes(dumps(INFO)) == [("needs-information", "$")]
    assert shapes(dumps({"content": [], "_meta": {"handoff": HANDOFF}})) == [("handoff", "$")]
    assert shapes(dumps({"entries": ENTRIES})) == [("transcript", "$.entries")]


def test_shapes_under_structured_content() -> None:
    for inner, kind, path in ((GATE, "gate", ""), (INFO, "needs-information", ""),
                              ({"handoff": HANDOFF}, "handoff", ""),
                              ({"transcript": ENTRIES}, "transcript", ".transcript")):
        raw = dumps({"content": [], "structuredContent": inner})
        assert shapes(raw) == [(kind, "$.structuredContent" + path)]
        assert lint_bytes(raw).findings == []


def test_shapes_inside_content_text() -> None:
    for inner, kind, path in ((GATE, "gate", ""), (INFO, "needs-information", ""),
                              ({"handoff": HANDOFF}, "handoff", ""),
                              ({"messages": ENTRIES}, "transcript", ".messages")):
        raw = dumps({"content": [{"type": "text", "text": "Not JSON."},
                                 {"type": "text", "text": json.dumps(inner)}]})
        assert shapes(raw) == [(kind, "$.content[1].text|$" + path)]
        assert lint_bytes(raw).findings == []


def test_ok_first_is_judged_on_each_places_text() -> None:
    late = {"needsHumanConfirmation": True, **GATE}
    raw = dumps({"content": [], "structuredContent": late})
    assert [(f.rule, f.path) for f in lint_bytes(raw).findings] == [
        ("ok-not-first", "$.structuredContent")]
    raw = dumps({"content": [{"type": "text", "text": json.dumps(late)}]})
    assert [(f.rule, f.path) for f in lint_bytes(raw).findings] == [
        ("ok-not-first", "$.content[0].text|$")]
    spaced = json.dumps(GATE, indent=4)  # whitespace is not a key: ok is still first
    assert lint_bytes(dumps({"content": [{"type": "text", "text": spaced}]})).findings == []


def test_a_json_rpc_response_is_unwrapped_once() -> None:
    raw = dumps({"jsonrpc": "2.0", "id": 3, "result": {"content": [], "structuredContent": GATE}})
    assert shapes(raw) == [("gate", "$.result.structuredContent")]
    assert lint_bytes(raw).findings == []
    raw = dumps({"jsonrpc": "2.0", "id": 3, "result": {"id": 1, **GATE}})
    assert [f.rule for f in lint_bytes(raw).findings] == ["ok-not-first"]


def test_handoff_is_reported_with_entries_and_drops() -> None:
    envelope = {"v": 1, "next": [{"kind": "dm", "to": "did:key:z6Mkabc"}, {"kind": "tv"}]}
    report = lint_bytes(dumps({"content": [], "_meta": {"handoff": envelope}}))
    assert [f.rule for f in report.findings] == ["handoff-entry-dropped"]
    found = report.to_json()["handoff"][0]
    assert [e["kind"] for e in found["entries"]] == ["dm"]
    assert found["dropped"][0]["reason"].startswith("unknown-kind")


def run(data: bytes) -> tuple[str, list[tuple[int, int | None, list[str]]]]:
    stream = lint_stream(io.BytesIO(data))
    out = [(r.index, r.line, [f.rule for f in r.findings]) for r in stream]
    return stream.mode, out


def test_jsonl_with_a_bad_line_goes_on() -> None:
    data = b"\n".join([dumps(GATE), b"{not json", b"", dumps(INFO), b"\xff\xfe{}", dumps(GATE)])
    mode, out = run(data + b"\n")
    assert mode == "jsonl"
    assert out == [(0, 1, []), (1, 2, ["invalid-json"]), (2, 4, []),
                   (3, 5, ["invalid-json"]), (4, 6, [])]


def test_jsonl_whose_first_line_is_bad() -> None:
    mode, out = run(b"{oops\n" + dumps(GATE) + b"\n")
    assert (mode, out) == ("jsonl", [(0, 1, ["invalid-json"]), (1, 2, [])])


def test_an_overlong_line_is_a_finding_and_the_rest_goes_on() -> None:
    data = dumps(GATE) + b"\n" + b'{"x": "' + b"a" * 500 + b'"}\n' + dumps(INFO) + b"\n"
    stream = lint_stream(io.BytesIO(data), max_result_bytes=200)
    out = [(r.index, [f.rule for f in r.findings]) for r in stream]
    assert out == [(0, []), (1, ["invalid-json"]), (2, [])]


def test_array_input_is_streamed_element_by_element() -> None:
    data = b"[\n " + b",\n ".join([dumps(GATE), b'{"ok": NaN}', dumps({"z": 1, **INFO})]) + b"\n]\n"
    mode, out = run(data)
    assert mode == "array"
    assert out == [(0, 2, []), (1, 3, ["invalid-json"]), (2, 4, ["ok-not-first"])]


def test_array_elements_across_chunk_boundaries() -> None:
    big = {**GATE, "message": "Please confirm. " + "é" * 700_000}  # > 1 MiB in UTF-8
    data = b"[" + b",".join([dumps(big), b"12345678", dumps(GATE)]) + b"]"
    mode, out = run(data)
    assert (mode, [o[2] for o in out]) == ("array", [[], [], []])


def test_a_broken_array_stops_with_a_finding() -> None:
    mode, out = run(b"[" + dumps(GATE) + b", {oops}, " + dumps(GATE) + b"]")
    assert mode == "array"
    assert out[0][2] == [] and out[1][2] == ["invalid-json"] and len(out) == 2
    for tail in (b"]  x", b"", b",]"):
        _, out = run(b"[" + dumps(GATE) + tail)
        assert out[-1][2] == ["invalid-json"]
    assert run(b"  []  ") == ("array", [])


def test_one_pretty_printed_value_is_one_result() -> None:
    mode, out = run(json.dumps(GATE, indent=2).encode())
    assert (mode, out) == ("single", [(0, 1, [])])
    mode, out = run(b'{\n  "ok": false,\n  "needsHumanConfirmation": true,\n')
    assert (mode, [o[2] for o in out]) == ("single", [["invalid-json"]])


def test_empty_input_has_no_results() -> None:
    assert run(b"") == ("jsonl", [])
    assert run(b"\n \n") == ("jsonl", [])


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    for report in lint_stream(io.BytesIO(data)):
        assert all(f.severity in ("error", "warning") for f in report.findings)


_json_scalar = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
_json = st.recursive(_json_scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.sampled_from(["ok", "needsHumanConfirmation", "needsInformation", "origin", "requestId",
                     "message", "agentHint", "question", "entries", "content", "text",
                     "structuredContent", "handoff", "_meta", "next", "kind", "v", "x"]),
    inner, max_size=6), max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(st.lists(_json | st.text(max_size=40), max_size=6), st.booleans())
def test_arbitrary_lines_never_crash(values: list[Any], as_array: bool) -> None:
    lines = [v if isinstance(v, str) and not v.startswith("{") else json.dumps(v)
             for v in values]
    body = ("[" + ",".join(lines) + "]") if as_array else "\n".join(lines)
    list(lint_stream(io.BytesIO(body.encode("utf-8", "surrogatepass"))))
