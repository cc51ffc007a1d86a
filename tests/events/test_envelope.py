"""The envelope and the payload union: bad events fail at the door, naming the field."""

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import get_args

import orjson
import pytest
from pydantic import ValidationError

from events import Event
from events.envelope import as_utc
from events.ids import derived_id, new_id
from events.payloads import (
    BY_TYPE,
    PAYLOAD_TYPES,
    LlmConfig,
    RunFinished,
    RunStarted,
    ToolReturned,
)
from events.payloads.model import Phase
from events.streams import is_stream
from events.wire import encode_batch

AT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def event_dict(**overrides: object) -> dict:
    data = {
        "id": str(new_id()),
        "stream": "run-abc",
        "version": 0,
        "occurred_at": AT.isoformat(),
        "payload": {"type": "run.started", "task": "t", "lab": "lab-1", "policy": "search"},
    }
    data.update(overrides)
    return data


def errors(exc: pytest.ExceptionInfo[ValidationError]) -> list[dict]:
    # pydantic adds "default factory not called" for `schema_version` whenever another
    # field fails (its default is computed from the payload): a consequence, not a cause.
    return [e for e in exc.value.errors() if e["type"] != "default_factory_not_called"]


def error_locs(exc: pytest.ExceptionInfo[ValidationError]) -> list[tuple]:
    return [err["loc"] for err in errors(exc)]


def test_a_valid_dict_validates_to_a_typed_payload() -> None:
    event = Event.model_validate(event_dict())
    assert isinstance(event.payload, RunStarted)
    assert event.type == "run.started"
    assert event.payload.budget.attempts is None
    assert event.position is None and event.recorded_at is None


def test_malformed_payload_names_the_wrong_field() -> None:
    payload = {"type": "run.started", "task": "t", "lab": "lab-1", "policy": "search", "seed": "x"}
    with pytest.raises(ValidationError) as exc:
        Event.model_validate(event_dict(payload=payload))
    assert ("payload", "run.started", "seed") in error_locs(exc)
    assert "seed" in str(exc.value)


def test_missing_payload_field_names_it() -> None:
    with pytest.raises(ValidationError) as exc:
        Event.model_validate(event_dict(payload={"type": "run.finished"}))
    [err] = errors(exc)
    assert err["loc"] == ("payload", "run.finished", "reason")
    assert err["type"] == "missing"


def test_nested_payload_field_is_named() -> None:
    payload = {
        "type": "tool.returned",
        "call_id": "c1",
        "tool": "bash",
        "exit_code": 0,
        "duration_s": 1.0,
        "files_read": [{"path": "a.py", "sha256": "not-a-hash"}],
    }
    with pytest.raises(ValidationError) as exc:
        Event.model_validate(event_dict(payload=payload))
    assert ("payload", "tool.returned", "files_read", 0, "sha256") in error_locs(exc)


def test_literal_values_are_enforced() -> None:
    with pytest.raises(ValidationError) as exc:
        Event.model_validate(event_dict(payload={"type": "run.finished", "reason": "bored"}))
    assert ("payload", "run.finished", "reason") in error_locs(exc)


def test_a_model_may_be_named_for_every_phase_the_revise_phase_too() -> None:
    """`--phase-model revise=…` was refused ("Input should be 'literature', 'plan',
    'experiment' or 'writeup'"), though an llm lab has a `revise` phase (found when a
    type checker was first run over the code)."""
    phases = {phase: f"model-{phase}" for phase in get_args(Phase)}
    assert "revise" in phases
    assert LlmConfig(model="m", phase_models=phases).phase_models == phases
    with pytest.raises(ValidationError) as exc:
        LlmConfig(model="m", phase_models={"review": "x"})  # type: ignore[dict-item]
    assert exc.value.errors()[0]["loc"] == ("phase_models", "review", "[key]")


def test_unknown_payload_field_is_rejected() -> None:
    payload = {"type": "run.finished", "reason": "done", "surprise": 1}
    with pytest.raises(ValidationError) as exc:
        Event.model_validate(event_dict(payload=payload))
    assert ("payload", "run.finished", "surprise") in error_locs(exc)


def test_unknown_type_is_rejected() -> None:
    with pytest.raises(ValidationError) as exc:
        Event.model_validate(event_dict(payload={"type": "run.exploded", "reason": "done"}))
    [err] = errors(exc)
    assert err["loc"] == ("payload",)
    assert err["type"] == "union_tag_invalid"
    assert "run.exploded" in str(exc.value)


def test_payload_without_type_is_rejected() -> None:
    with pytest.raises(ValidationError) as exc:
        Event.model_validate(event_dict(payload={"reason": "done"}))
    assert [e["type"] for e in errors(exc)] == ["union_tag_not_found"]


@pytest.mark.parametrize(
    "stream",
    [
        "run-abc",
        "campaign-0192f1e2-aaaa-7bbb-8ccc-123456789abc",
        "lab_x-a.b:c_d-e",
        "r-1",
        "run-" + "x" * 160,
    ],
)
def test_good_stream_names(stream: str) -> None:
    assert is_stream(stream)
    assert Event.model_validate(event_dict(stream=stream)).stream == stream


@pytest.mark.parametrize(
    "stream",
    ["run", "run-", "Run-abc", "1run-abc", "-abc", "run-a b", "run-a/b", "run-" + "x" * 161, ""],
)
def test_bad_stream_names_are_rejected(stream: str) -> None:
    assert not is_stream(stream)
    with pytest.raises(ValidationError) as exc:
        Event.model_validate(event_dict(stream=stream))
    assert error_locs(exc) == [("stream",)]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("version", -1),
        ("occurred_at", "2025-03-01T12:00:00"),  # naive: every timestamp is aware
        ("id", "not-a-uuid"),
        ("schema_version", 0),
        ("causation_id", "nope"),
        ("surprise", 1),  # unknown envelope field
    ],
)
def test_bad_envelope_fields_are_named(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        Event.model_validate(event_dict(**{field: value}))
    assert error_locs(exc) == [(field,)]


def test_every_payload_type_is_in_the_union_by_its_tag() -> None:
    assert set(BY_TYPE.values()) == set(PAYLOAD_TYPES)
    assert len(BY_TYPE) == len(PAYLOAD_TYPES)  # no two types share a tag
    for tag, cls in BY_TYPE.items():
        assert cls.model_fields["type"].default == tag


def test_events_are_immutable() -> None:
    event = Event.model_validate(event_dict())
    with pytest.raises(ValidationError):
        event.version = 3  # type: ignore[misc]
    with pytest.raises(ValidationError):
        event.payload.task = "other"  # type: ignore[misc]


def test_schema_version_defaults_to_the_payload_class_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Event.model_validate(event_dict()).schema_version == RunStarted.SCHEMA_VERSION == 1
    monkeypatch.setattr(RunFinished, "SCHEMA_VERSION", 4)
    made = Event(
        id=new_id(), stream="run-a", version=0, occurred_at=AT, payload=RunFinished(reason="done")
    )
    assert made.schema_version == 4
    validated = Event.model_validate(event_dict(payload={"type": "run.finished", "reason": "done"}))
    assert validated.schema_version == 4
    # Other types keep theirs.
    assert Event.model_validate(event_dict()).schema_version == 1
    # An explicit version is kept as given (the recorder upgrades before validating).
    assert Event.model_validate(event_dict(schema_version=2)).schema_version == 2


def test_wire_round_trip_keeps_every_field() -> None:
    plus_one = timezone(timedelta(hours=1))
    event = Event(
        id=derived_id("run-a:0", AT),
        stream="run-a",
        version=0,
        occurred_at=datetime(2025, 3, 1, 13, 0, 0, 5, tzinfo=plus_one),
        causation_id=uuid.uuid4(),
        correlation_id="campaign-1",
        actor="lab-1",
        payload=ToolReturned(call_id="c", tool="bash", exit_code=1, duration_s=0.5, preview="é\n"),
    )
    body = orjson.loads(encode_batch([event], {"ab": b"\x00\x01"}))
    assert body["blobs"] == {"ab": "AAE="}
    [again] = [Event.model_validate(item) for item in body["events"]]
    assert again == event
    assert encode_batch([]) == '{"events":[]}'


def test_derived_ids_are_stable_time_ordered_uuid7() -> None:
    first = derived_id("run-a:0", AT)
    assert first == derived_id("run-a:0", AT)
    assert first != derived_id("run-a:1", AT)
    assert first.version == 7
    assert derived_id("run-a:0", AT + timedelta(milliseconds=1)) > first
    assert new_id().version == 7


def test_as_utc_makes_naive_utc_and_keeps_aware() -> None:
    naive = datetime(2025, 1, 1, 10, 0)
    assert as_utc(naive) == datetime(2025, 1, 1, 10, 0, tzinfo=UTC)
    aware = datetime(2025, 1, 1, 10, 0, tzinfo=timezone(timedelta(hours=-5)))
    assert as_utc(aware) is aware
