"""A Messages API stream that ends in an `error` event is no answer: reading it says the
provider's error, so the relay records a failed call, not the text streamed before it."""

import json

import pytest

from runstate.answers import Unreadable, answer_json


def _stream(*events: dict) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


START = {"type": "message_start", "message": {"id": "m1", "type": "message", "content": []}}
BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
DELTA = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}
ERROR = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


@pytest.mark.parametrize("events", [(START, BLOCK, DELTA, ERROR), (ERROR,)], ids=["mid", "only"])
def test_a_stream_ending_in_an_error_is_unreadable_naming_it(events: tuple[dict, ...]) -> None:
    with pytest.raises(Unreadable, match="overloaded_error: Overloaded"):
        answer_json("messages", _stream(*events), streamed=True)


def test_a_stream_without_an_error_is_its_message() -> None:
    stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}
    message = answer_json("messages", _stream(START, BLOCK, DELTA, stop), streamed=True)
    assert message["content"] == [{"type": "text", "text": "Hel"}]
    assert message["stop_reason"] == "end_turn"
