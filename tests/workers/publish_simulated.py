"""Publish simulated runs from a process of their own, as a lab on another machine would.

Run by tests/workers/test_celery_delivery.py as a subprocess; the bus comes from the
`LABRXIV_*` environment (`open_bus`), so with `LABRXIV_REDIS_URL` set the messages go
through Redis. Prints a JSON summary (`messages`, `events`) on stdout.

Two ways to cut the runs into messages:
- `--chunk N`: each run in messages of N events, interleaved across runs (chunk 0 of
  every run, then chunk 1 …). A stream spans messages, which is only safe while they
  are recorded in the order sent (one consumer, no redelivery).
- `--runs-per-message K`: K whole runs per message, so messages may be recorded in any
  order (a redelivered message comes back after later ones).

`--malformed` adds bad input around good events: an invalid event in the middle of
a message (and in a message of its own, between good ones), and a message that is
not JSON.
"""

import argparse
import json
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from events import Event
from events.wire import encode_batch
from labrxiv.settings import load_settings
from labrxiv.wiring import open_bus
from workers.bus.base import RECORD_TASK, Bus, publish

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, run as a script

from tests.simulated import simulated_run  # noqa: E402

START = datetime(2026, 1, 1, tzinfo=UTC)
BAD_VERSION_ID = uuid.UUID("00000000-0000-7000-8000-00000000bad1")
BAD_TYPE_ID = uuid.UUID("00000000-0000-7000-8000-00000000bad2")
NOT_JSON = "{this is not json"


def runs(count: int, attempts: int, first: int = 0) -> list[list[Event]]:
    """The events of `count` simulated runs, numbered from `first` (the test derives the
    same ids)."""
    return [
        list(simulated_run(f"r{i}", START, attempts=attempts, seed=i))
        for i in range(first, first + count)
    ]


def bad_version(template: Event) -> dict[str, object]:
    """An event whose version is negative: fails validation at the recorder's door."""
    item = template.model_dump(mode="json")
    item.update(id=str(BAD_VERSION_ID), stream="run-malformed-version", version=-1)
    return item


def bad_type(template: Event) -> dict[str, object]:
    """An event whose payload names no known event type."""
    item = template.model_dump(mode="json")
    item.update(id=str(BAD_TYPE_ID), stream="run-malformed-type", version=0)
    item["payload"] = {"type": "no.such.type", "detail": "x"}
    return item


def send_with_bad_event(bus: Bus, events: list[Event]) -> None:
    """One message: good events, an invalid one in the middle, more good events."""
    half = len(events) // 2
    body = json.loads(encode_batch(events))
    body["events"].insert(half, bad_version(events[0]))
    bus.send(RECORD_TASK, json.dumps(body))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", type=int)
    parser.add_argument("attempts", type=int)
    cut = parser.add_mutually_exclusive_group(required=True)
    cut.add_argument("--chunk", type=int)
    cut.add_argument("--runs-per-message", type=int)
    parser.add_argument("--first", type=int, default=0, help="the first run's number")
    parser.add_argument("--malformed", action="store_true")
    parser.add_argument(
        "--reverse", action="store_true", help="send the last message first (later parts first)"
    )
    args = parser.parse_args()

    streams = runs(args.runs, args.attempts, args.first)
    if args.chunk:
        longest = max(len(events) for events in streams)
        messages = [
            events[start : start + args.chunk]
            for start in range(0, longest, args.chunk)
            for events in streams
            if events[start : start + args.chunk]
        ]
    else:
        k = args.runs_per_message
        messages = [
            [event for events in streams[i : i + k] for event in events]
            for i in range(0, len(streams), k)
        ]
    if args.reverse:
        messages.reverse()
    bus = open_bus(load_settings())
    try:
        for index, batch in enumerate(messages):
            if args.malformed and index == 1:
                send_with_bad_event(bus, batch)
            else:
                publish(bus, batch)
            if args.malformed and index == 2:
                bus.send(RECORD_TASK, json.dumps({"events": [bad_type(batch[0])]}))
                bus.send(RECORD_TASK, NOT_JSON)
    finally:
        bus.close()
    summary = {"messages": len(messages), "events": sum(len(batch) for batch in messages)}
    sys.stdout.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
