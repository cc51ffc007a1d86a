"""`Recorded.typed()`: a stored event as a typed `Event`, its payload validated and its
envelope trusted (the store's typed columns), equal to a full validation; and
`Recorded.typed_record()`: the same fields and payload without the envelope."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from events import EventStore
from events.recorded import Recorded, TypedRecord
from tests.analysis.runlog import RunLog


def _stored_run(tmp_path: Path, tool: str, args: dict[str, str]) -> tuple[RunLog, list[Recorded]]:
    """A run of one call that wrote a file, then graded and finished, and its records as
    the store gives them back."""
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'log.db'}")
    log = RunLog()
    log.call(tool, args, written=[("outputs/p.csv", "ab" * 32)])
    log.evaluate(0.5)
    log.finish()
    store.append(log.events)
    records = store.read_records(after=0, limit=100)
    assert len(records) == len(log.events)
    return log, records


def test_typed_equals_a_full_validation_of_what_was_stored(tmp_path) -> None:
    log, records = _stored_run(tmp_path, "python", {"code": "print(1)"})
    for record, original in zip(records, log.events, strict=True):
        typed, validated = record.typed(), record.validated()
        assert typed == validated and typed.model_fields_set == validated.model_fields_set
        assert typed.model_dump() == validated.model_dump()
        assert typed.payload == original.payload and typed.id == original.id
        with pytest.raises(ValidationError):  # still frozen, like any validated event
            typed.version = 99  # type: ignore[misc]


def test_a_typed_record_has_the_typed_events_fields_and_payload(tmp_path) -> None:
    _, records = _stored_run(tmp_path, "bash", {"command": "ls"})
    for record in records:
        typed, light = record.typed(), record.typed_record()
        assert type(light.payload) is type(typed.payload) and light.payload == typed.payload
        for name in TypedRecord._fields:
            assert getattr(light, name) == getattr(typed, name), name


def test_a_stored_payload_of_the_wrong_shape_is_refused_with_its_field(tmp_path) -> None:
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'log.db'}")
    log = RunLog()
    store.append(log.events)
    record = store.read_records(after=0, limit=1)[0]
    broken = record._replace(payload={**record.payload, "lab": 7})
    with pytest.raises(ValidationError, match="lab"):
        broken.typed()
    with pytest.raises(ValidationError, match="lab"):
        broken.typed_record()
    unknown = record._replace(type="no.such", payload={**record.payload, "type": "no.such"})
    with pytest.raises(ValidationError):
        unknown.typed()
    with pytest.raises(ValidationError):
        unknown.typed_record()
