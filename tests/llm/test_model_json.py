"""Tool arguments as models write them: strict JSON, or JSON with a trailing comma or
comments, which say unambiguously what was meant; anything else is refused with the
strict parser's error."""

import json

import pytest

from workers.llm import model_json
from workers.llm.reply import _tool_call


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ('{"path": "config.json"}', {"path": "config.json"}),
        ('{"path": "config.json",}', {"path": "config.json"}),
        ('{"claims": [1, 2,\n  ],\n}', {"claims": [1, 2]}),
        ('{\n  // the file\n  "path": "a.py"\n}', {"path": "a.py"}),
        ('{"n": 1 /* one */, "m": 2}', {"n": 1, "m": 2}),
        ('{"url": "http://x//y", "s": ",}"}', {"url": "http://x//y", "s": ",}"}),
        ('{"quote": "a \\"//\\" b",}', {"quote": 'a "//" b'}),
    ],
    ids=["strict", "trailing", "nested", "line comment", "block comment", "in strings", "escapes"],
)
def test_slips_that_leave_no_doubt_are_read_as_meant(written: str, meant: object) -> None:
    assert model_json.loads(written) == meant


@pytest.mark.parametrize("written", ['{"path": ', "{'path': 'x'}", '{"a": 1,, "b": 2}', "[,]"])
def test_anything_else_is_refused_with_the_strict_error(written: str) -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        model_json.loads(written)
    with pytest.raises(json.JSONDecodeError) as strict:
        json.loads(written)
    assert str(raised.value) == str(strict.value)


def test_a_tool_call_with_a_trailing_comma_runs_with_the_arguments_meant() -> None:
    call = _tool_call("c1", "read_file", '{"path": "config.json",}', frozenset({"read_file"}))
    assert call.problem is None and call.arguments == {"path": "config.json"}
    assert call.raw_arguments == '{"path": "config.json",}', "kept as the model wrote it"
    broken = _tool_call("c2", "read_file", '{"path": ', frozenset({"read_file"}))
    assert broken.problem is not None and "not valid JSON" in broken.problem
