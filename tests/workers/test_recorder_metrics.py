"""System metrics counted at the recorder's seams (workers/metrics.py): every event it
appends is counted by type, a redelivered message's events as skipped, and every dead
letter it writes under a reason label of the documented set, never `other`."""

import base64
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from events import EventStore
from events.wire import encode_batch
from tests.simulated import simulated_run
from workers.bus.memory import MemoryBus
from workers.context import WorkerContext
from workers.metrics import REASON_LABELS, dead_letter_reason
from workers.recorder import record_dead_letter, record_message

START = datetime(2026, 1, 1, tzinfo=UTC)


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def ctx(tmp_path: Path) -> WorkerContext:
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'log.db'}")
    return WorkerContext(store=store, bus=MemoryBus(), max_message_bytes=100_000)


def test_appended_events_are_counted_by_type_and_a_redelivery_as_skipped(
    ctx: WorkerContext,
) -> None:
    events = list(simulated_run("m", START, attempts=2))
    before = value("labrxiv_events_recorded_total", type="tool.invoked")
    skipped = value("labrxiv_events_skipped_total")
    message = encode_batch(events)
    record_message(ctx, message)
    record_message(ctx, message)  # redelivered: the store keeps one copy
    assert value("labrxiv_events_recorded_total", type="tool.invoked") == before + 2
    assert value("labrxiv_events_skipped_total") == skipped + len(events)


def test_a_diverged_second_take_is_counted(ctx: WorkerContext) -> None:
    """A step's second take that came out longer is left out whole, and counted."""
    events = list(simulated_run("d", START, attempts=2))
    record_message(ctx, encode_batch(events[:3]))
    before = value("labrxiv_diverged_takes_total")
    outcome = record_message(ctx, encode_batch(events[:5]))  # the first three, and two more
    assert (outcome.appended, outcome.skipped) == (0, 5)
    assert value("labrxiv_diverged_takes_total") == before + 1


GARBAGE = {
    "not_json": "{",
    "not_a_batch": "[1, 2]",
    "too_large": '{"events": [], "pad": "' + "x" * 200_000 + '"}',
    "invalid_event": '{"events": [{"id": "nope"}]}',
    "bad_blob": '{"events": [], "blobs": {"abc": "' + base64.b64encode(b"x").decode() + '"}}',
}


@pytest.mark.parametrize("label", sorted(GARBAGE))
def test_each_dead_letter_of_the_recorder_has_its_reason_label(
    ctx: WorkerContext, label: str
) -> None:
    before = value("labrxiv_dead_letters_total", reason=label)
    assert record_message(ctx, GARBAGE[label]).dead == 1
    [letter] = ctx.store.dead_letters()
    assert dead_letter_reason(letter.reason) == label, letter.reason
    assert value("labrxiv_dead_letters_total", reason=label) == before + 1


def test_a_version_conflict_and_a_duplicate_id_have_their_labels(ctx: WorkerContext) -> None:
    events = list(simulated_run("c", START, attempts=1))
    record_message(ctx, encode_batch(events[:2]))
    other = list(simulated_run("c", START, attempts=1, seed=9))  # same stream, other ids
    record_message(ctx, encode_batch(other[1:2]))
    duplicate = encode_batch([events[2], events[2]])
    record_message(ctx, duplicate)
    reasons = {dead_letter_reason(letter.reason) for letter in ctx.store.dead_letters()}
    assert reasons == {"version_conflict", "duplicate_id"}


def test_an_undeliverable_message_is_counted_apart(ctx: WorkerContext) -> None:
    before = value("labrxiv_dead_letters_total", reason="undeliverable")
    record_dead_letter(ctx, "steps", "not a task", "raw")
    assert value("labrxiv_dead_letters_total", reason="undeliverable") == before + 1
    assert "other" not in REASON_LABELS
