"""JSON as models write it: strict JSON, or JSON with the slips that leave no doubt about
what was meant — a trailing comma before `}` or `]`, `//` and `/* */` comments — which
models served by local servers make and OpenAI's strict mode never does."""

import json
from typing import Any


def loads(text: str) -> Any:
    """`text` parsed as JSON; with its trailing commas and comments left out if it is not
    strict JSON. Raises the strict parser's `json.JSONDecodeError` when it is neither."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as strict:
        repaired = _without_slips(text)
        if repaired == text:
            raise
        try:
            return json.loads(repaired)
        except json.JSONDecodeError:
            raise strict from None


def _without_slips(text: str) -> str:
    """`text` with comments and trailing commas removed outside its strings."""
    out: list[str] = []
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == '"':  # a string, copied whole (escapes included)
            end = index + 1
            while end < size and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[index : end + 1])
            index = end + 1
        elif text.startswith("//", index):
            newline = text.find("\n", index)
            index = size if newline < 0 else newline
        elif text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = size if close < 0 else close + 2
        elif char in "}]":
            _drop_trailing_comma(out)
            out.append(char)
            index += 1
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _drop_trailing_comma(out: list[str]) -> None:
    """Remove a comma that ends what `out` holds so far, after a value (`[,]` stays)."""
    end = len(out)
    while end and out[end - 1].isspace():
        end -= 1
    if end < 1 or out[end - 1] != ",":
        return
    before = end - 1
    while before and out[before - 1].isspace():
        before -= 1
    if before and out[before - 1] not in "[{,":
        del out[end - 1 :]
