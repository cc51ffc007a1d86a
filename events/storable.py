"""Text every database of the log can hold: the one rule for text from outside (a tool's
output, an agent's words, a rejected message).

PostgreSQL text cannot hold a NUL, and neither database a lone surrogate (text that is
not Unicode, e.g. from a producer's JSON escape `"\\ud800"`). Such characters are
written as their escapes, `\\x00` and `\\ud800`, so the text is kept, visibly, rather
than refused.
"""

from typing import Any


def storable(text: str) -> str:
    """`text` with every NUL written `\\x00` and every lone surrogate `\\udXXX`."""
    text = text.replace("\x00", "\\x00")
    try:
        text.encode()
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode()
    return text


def storable_value(value: Any) -> Any:
    """A JSON value with `storable` applied to every string in it, keys included."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, list):
        return [storable_value(item) for item in value]
    if isinstance(value, dict):
        return {storable_value(k): storable_value(v) for k, v in value.items()}
    return value
