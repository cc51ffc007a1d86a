"""Upgrade on read: old payload shapes come out in today's shape; the log is never rewritten.

The tests give a real payload class a newer `SCHEMA_VERSION` and an upgrade function
with monkeypatch, after events were stored at the old version.
"""

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text

from events import Event, EventStore
from events.errors import UnknownSchemaVersion, UpgradeFailed
from events.ids import new_id
from events.payloads import RunFinished, ToolInvoked
from events.upgrade import upgrade
from events.wire import encode_batch
from workers.context import WorkerContext
from workers.recorder import record_message

AT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


class NullBus:
    stopped = False

    def send(self, task: str, *args: Any) -> None:
        raise AssertionError("the recorder sends nothing by itself")

    def close(self) -> None:
        pass


def finished(stream: str, version: int, detail: str) -> Event:
    return Event(
        id=new_id(),
        stream=stream,
        version=version,
        occurred_at=AT,
        payload=RunFinished(reason="done", detail=detail),
    )


def invoked(stream: str, version: int) -> Event:
    return Event(
        id=new_id(),
        stream=stream,
        version=version,
        occurred_at=AT,
        payload=ToolInvoked(call_id="c", tool="bash"),
    )


def shout(data: dict[str, Any]) -> dict[str, Any]:
    """A v1 → v2 upgrade: v2 details are upper case and say where they came from."""
    data["detail"] = data["detail"].upper() + " [from v1]"
    return data


def raw_row(store: EventStore, event_id: uuid.UUID) -> tuple[int, dict[str, Any]]:
    """The stored (schema_version, payload) of an event, bypassing the store's reader."""
    key = event_id.hex if store.engine.dialect.name == "sqlite" else event_id
    with store.engine.connect() as conn:
        schema, payload = conn.execute(
            text("SELECT schema_version, payload FROM events WHERE id = :id"), {"id": key}
        ).one()
    return schema, payload if isinstance(payload, dict) else json.loads(payload)


@pytest.fixture
def store(store_url: str) -> EventStore:
    return EventStore.from_url(store_url)


def test_old_rows_are_upgraded_on_read_and_left_as_stored(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = finished("run-a", 0, "all good")
    other = invoked("run-c", 0)  # another stream: a run takes nothing after its end
    store.append([old, other])

    monkeypatch.setattr(RunFinished, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(RunFinished, "UPGRADES", {1: shout})

    [record, other_record] = store.read_records()
    assert record.schema_version == 2
    assert record.payload["detail"] == "ALL GOOD [from v1]"
    assert (other_record.schema_version, other_record.payload["call_id"]) == (1, "c")
    readers = {
        "read": store.read()[0],
        "read_stream": store.read_stream("run-a")[0],
        "get": store.get(old.id),
        "iter_records": next(store.iter_records()).typed(),
    }
    for name, event in readers.items():
        assert event.schema_version == 2, name
        assert event.payload == RunFinished(reason="done", detail="ALL GOOD [from v1]"), name

    # The log keeps what was written.
    stored = {"type": "run.finished", "reason": "done", "detail": "all good"}
    assert raw_row(store, old.id) == (1, stored)

    # An event written now is in today's shape and is not upgraded again.
    new = finished("run-b", 0, "fresh")
    assert new.schema_version == 2
    store.append([new])
    assert raw_row(store, new.id)[0] == 2
    assert store.get(new.id).payload.detail == "fresh"


def test_upgrades_chain_from_the_stored_version(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def to_v2(data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "detail": data["detail"] + "+2"}

    def to_v3(data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "detail": data["detail"] + "+3"}

    at_v1 = finished("run-a", 0, "one")
    store.append([at_v1])
    monkeypatch.setattr(RunFinished, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(RunFinished, "UPGRADES", {1: to_v2})
    at_v2 = finished("run-b", 0, "two")
    store.append([at_v2])
    monkeypatch.setattr(RunFinished, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(RunFinished, "UPGRADES", {1: to_v2, 2: to_v3})

    details = {r.id: (r.schema_version, r.payload["detail"]) for r in store.read_records()}
    assert details == {at_v1.id: (3, "one+2+3"), at_v2.id: (3, "two+3")}
    assert [raw_row(store, e.id)[0] for e in (at_v1, at_v2)] == [1, 2]


def test_a_newer_stored_version_than_the_code_is_refused_clearly(store: EventStore) -> None:
    event = finished("run-a", 0, "from the future")
    store.append([event])
    # A newer labrxiv wrote this row.
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE events SET schema_version = 7"))
    message = r"run\.finished schema v7 is newer than this labrxiv reads \(v1\)"
    with pytest.raises(UnknownSchemaVersion, match=message):
        store.read_records()
    with pytest.raises(UnknownSchemaVersion, match=message):
        store.get(event.id)
    with pytest.raises(UnknownSchemaVersion, match=message):
        store.read_stream("run-a")
    with pytest.raises(UnknownSchemaVersion, match=message):
        list(store.iter_records())


# -- upgrade() itself --------------------------------------------------------------


def test_upgrade_leaves_current_unknown_and_malformed_data_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    current = {"schema_version": 1, "payload": {"type": "run.finished", "reason": "done"}}
    assert upgrade(current) is current
    monkeypatch.setattr(RunFinished, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(RunFinished, "UPGRADES", {1: shout})
    for data in (
        {"schema_version": 1, "payload": {"type": "run.unknown"}},
        {"schema_version": 1, "payload": "not a dict"},
        {"schema_version": "1", "payload": {"type": "run.finished", "detail": "x"}},
        {"payload": {"type": "run.finished", "detail": "x"}},
        {"schema_version": 1, "payload": {"type": ["unhashable"]}},
    ):
        assert upgrade(data) == data


def test_upgrade_does_not_mutate_its_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RunFinished, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(RunFinished, "UPGRADES", {1: shout})
    payload = {"type": "run.finished", "reason": "done", "detail": "x"}
    data = {"schema_version": 1, "payload": payload, "stream": "run-a"}
    upgraded = upgrade(data)
    assert upgraded == {
        "schema_version": 2,
        "payload": {"type": "run.finished", "reason": "done", "detail": "X [from v1]"},
        "stream": "run-a",
    }
    assert data == {"schema_version": 1, "payload": payload, "stream": "run-a"}
    assert payload["detail"] == "x"


def test_upgrade_refuses_a_newer_version() -> None:
    data = {"schema_version": 2, "payload": {"type": "tool.invoked", "call_id": "c"}}
    with pytest.raises(UnknownSchemaVersion, match=r"tool\.invoked schema v2 .*\(v1\)"):
        upgrade(data)


# -- the recorder upgrades what producers send -------------------------------------


def test_recorder_stores_an_old_producers_event_in_todays_shape(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An older producer (v1) still publishes while the recorder runs v2 code.
    message = encode_batch([finished("run-a", 0, "late")])
    monkeypatch.setattr(RunFinished, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(RunFinished, "UPGRADES", {1: shout})
    ctx = WorkerContext(store=store, bus=NullBus())
    outcome = record_message(ctx, message)
    assert (outcome.appended, outcome.dead) == (1, 0)
    [event] = store.read()
    assert (event.schema_version, event.payload.detail) == (2, "LATE [from v1]")
    assert raw_row(store, event.id) == (
        2,
        {"type": "run.finished", "reason": "done", "detail": "LATE [from v1]"},
    )


def test_recorder_dead_letters_an_event_from_a_newer_producer(store: EventStore) -> None:
    good = finished("run-a", 0, "ok")
    future = finished("run-b", 0, "v9").model_dump(mode="json") | {"schema_version": 9}
    body = json.loads(encode_batch([good]))
    body["events"].append(future)
    outcome = record_message(WorkerContext(store=store, bus=NullBus()), json.dumps(body))
    assert (outcome.appended, outcome.dead) == (1, 1)
    [letter] = store.dead_letters()
    assert "run.finished schema v9 is newer" in letter.reason
    assert letter.stream == "run-b"
    assert [e.id for e in store.read()] == [good.id]


def test_recorder_dead_letters_an_old_event_its_upgrade_cannot_read(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A v1 event from an old producer that lacks the field the upgrade needs must not
    # stop the recorder: it is dead-lettered, the rest of the batch is recorded.
    good = finished("run-a", 0, "ok")
    body = json.loads(encode_batch([good]))
    broken = finished("run-b", 0, "x").model_dump(mode="json")
    del broken["payload"]["detail"]
    body["events"].append(broken)
    monkeypatch.setattr(RunFinished, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(RunFinished, "UPGRADES", {1: shout})
    outcome = record_message(WorkerContext(store=store, bus=NullBus()), json.dumps(body))
    assert (outcome.appended, outcome.dead) == (1, 1)
    [letter] = store.dead_letters()
    assert "run.finished" in letter.reason and "v1" in letter.reason
    assert "detail" in letter.reason
    assert letter.stream == "run-b"
    assert [e.id for e in store.read()] == [good.id]


def test_a_stored_payload_its_upgrade_cannot_read_fails_clearly(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append([finished("run-a", 0, "x")])

    def needs_a_field(data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "detail": data["summary"]}

    monkeypatch.setattr(RunFinished, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(RunFinished, "UPGRADES", {1: needs_a_field})
    with pytest.raises(
        UpgradeFailed, match=r"run\.finished schema v1 .* to v2: KeyError\('summary'\)"
    ):
        store.read_records()


def test_a_phase_change_recorded_as_a_failure_is_read_as_a_success() -> None:
    """`next_phase` was recorded with exit code 2 and `ran` false, though it did what was
    asked: a log written so reads it as today's lab writes it (a success); a `next_phase`
    that was refused or not run stays a failure."""

    def returned(preview: str) -> dict[str, Any]:
        payload = {
            "type": "tool.returned",
            "call_id": "c",
            "tool": "next_phase",
            "exit_code": 2,
            "duration_s": 0,
            "preview": preview,
            "ran": False,
        }
        return upgrade({"schema_version": 1, "payload": payload})["payload"]

    assert returned("entering phase experiment") == {
        "type": "tool.returned",
        "call_id": "c",
        "tool": "next_phase",
        "exit_code": 0,
        "duration_s": 0,
        "preview": "entering phase experiment",
        "ran": True,
    }
    for refused in ("error: next_phase is not offered in phase writeup", "not run: …"):
        assert (returned(refused)["exit_code"], returned(refused)["ran"]) == (2, False)
