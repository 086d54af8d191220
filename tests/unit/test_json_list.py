"""``JsonList``: a long list in a --json document is spooled, and the document is exactly the
one ``json.dumps`` of the whole would give (same layout, same escaping of terminal controls)."""

from __future__ import annotations

import json

import pytest

from muretai_cli.cli._json import JsonList, emit_json


def _expected(doc: dict[str, object], capsys: pytest.CaptureFixture[str]) -> str:
    emit_json(doc)
    return capsys.readouterr().out


@pytest.mark.parametrize("count", [0, 1, 3, 4000])
def test_a_spooled_list_prints_what_the_whole_list_would(
        count: int, capsys: pytest.CaptureFixture[str]) -> None:
    items = [{"index": i, "text": f"r\u00e9sultat {i} \u009b\u202e", "nested": {"a": [i, None]},
              "empty": [], "obj": {}} for i in range(count)]
    whole = _expected({"ok": False, "input": "x", "results": items, "after": {"k": [1]}},
                      capsys)
    spooled = JsonList()
    for item in items:
        spooled.append(item)
    emit_json({"ok": False, "input": "x", "results": spooled, "after": {"k": [1]}})
    out = capsys.readouterr().out
    assert out == whole
    assert json.loads(out)["results"] == items
    assert ("\u009b" not in out and "\\u009b" in out) or count == 0
