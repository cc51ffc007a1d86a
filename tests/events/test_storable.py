"""Text from outside is kept as every database of the log can hold it, its bad characters
written as their escapes (`events.storable`), on both backends."""

import uuid

from events import Event, EventStore
from events.ids import utcnow
from events.payloads import ToolReturned
from events.storable import storable, storable_value


def test_nul_and_lone_surrogates_are_written_as_their_escapes() -> None:
    assert storable("a\x00b") == "a\\x00b"
    assert storable("x\ud800y") == "x\\ud800y"
    assert storable("plain é") == "plain é"
    value = {"k\x00": ["\x00", 1, {"n": "\udfff"}], "ok": None}
    assert storable_value(value) == {"k\\x00": ["\\x00", 1, {"n": "\\udfff"}], "ok": None}


def test_storable_text_is_stored_and_read_back_on_every_backend(store_url: str) -> None:
    store = EventStore.from_url(store_url)
    preview = storable("binary \x00 output \ud800 here")
    returned = ToolReturned(call_id="c", tool="bash", exit_code=0, duration_s=0.1, preview=preview)
    stream = f"run-{uuid.uuid4()}"
    event = Event(id=uuid.uuid4(), stream=stream, version=0, occurred_at=utcnow(), payload=returned)
    store.append([event])
    (back,) = store.read_stream(stream)
    assert back.payload.preview == "binary \\x00 output \\ud800 here"  # type: ignore[union-attr]
