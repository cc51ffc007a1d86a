"""Interrupting a campaign's runs and taking them up again.

An interruption is recorded as a `campaign.interrupted` naming the runs a stop left
unfinished, and a `run.interrupted` in each of those runs' streams (the stop the run's
wall time leaves out: `runstate.budget.wall_seconds`). The campaign event's id is
derived from those runs and the last version each was worked to, and a run's from its
stream and version, so recording the same stop twice (a second Ctrl-C, a retried
command) keeps one of each; a stop after the runs moved on is another interruption, with
other ids. A run already stopped is not stopped again: its stop lasts to its next event.
"""

from collections.abc import Iterable
from datetime import datetime

from events import Event, EventStore
from events.ids import derived_id, utcnow
from events.payloads import CampaignInterrupted, RunInterrupted
from events.recorded import Recorded
from events.streams import campaign_stream
from workers.bus.base import Bus
from workers.lab.reaper import unfinished_runs
from workers.lab.step import LAB_STEP_TASK

ACTOR = "labrxiv"
"""Who records an interruption: the command that stopped the work."""


def unfinished_by_campaign(store: EventStore, campaign: str | None = None) -> dict[str, list[str]]:
    """The runs started and not finished (of `campaign`, if given), by campaign."""
    runs = set(unfinished_runs(store, campaign))
    found: dict[str, list[str]] = {}
    for record in store.iter_records(types=["run.started"], correlation=campaign):
        if record.stream in runs:
            found.setdefault(record.correlation_id or "", []).append(record.stream)
    return found


def record_interrupted(store: EventStore, campaign: str, runs: list[str], detail: str) -> bool:
    """Append `run.interrupted` to each of `runs` not stopped already, then
    `campaign.interrupted` naming `runs` to the campaign's stream; False when the log
    holds this interruption already (the runs have not moved since)."""
    stream = campaign_stream(campaign)
    now = utcnow()
    stops: list[Event] = []
    worked: list[tuple[str, int, datetime | None]] = []  # each run's last event but a stop
    for run in runs:
        last = store.last_record(run)
        if last is None:
            worked.append((run, -1, None))
        elif last.type == "run.interrupted":
            before = before_stop(store, last)
            worked.append((run, last.version - 1, before.occurred_at if before else None))
        else:
            stops.append(_stop(last, detail, now))
            worked.append((run, last.version, last.occurred_at))
    stopped = bool(store.append(stops).appended) if stops else False
    seed = ",".join(f"{run}@{version}" for run, version, _ in worked)
    times = [at for _, _, at in worked if at is not None]
    event = Event(
        id=derived_id(f"{stream}:interrupted:{seed}", max(times, default=now)),
        stream=stream,
        version=store.stream_version(stream) + 1,
        occurred_at=now,
        correlation_id=campaign,
        actor=ACTOR,
        payload=CampaignInterrupted(runs=runs, detail=detail),
    )
    return bool(store.append([event]).appended) or stopped


def before_stop(store: EventStore, stop: Recorded) -> Event | None:
    """The event a run's stop (`stop`, a `run.interrupted`) follows: what the run was
    doing when it was stopped; None for a stop at its first version."""
    if stop.version == 0:
        return None
    found = store.read_stream(stop.stream, after_version=stop.version - 2, limit=1)
    return found[0] if found else None


def _stop(last: Recorded, detail: str, now: datetime) -> Event:
    """The `run.interrupted` that follows `last`, the run's last event, at `now`."""
    return Event(
        # An id of its own, not the one a step's first event at this version gets: that
        # step's events, reaching the log after the stop, are a version conflict (kept as
        # a dead letter), never taken for already recorded.
        id=derived_id(f"{last.stream}:{last.version + 1}:interrupted", last.occurred_at),
        stream=last.stream,
        version=last.version + 1,
        occurred_at=max(now, last.occurred_at),
        causation_id=last.id,
        correlation_id=last.correlation_id,
        actor=ACTOR,
        payload=RunInterrupted(detail=detail),
    )


def resume_runs(bus: Bus, store: EventStore, runs: Iterable[str]) -> list[str]:
    """Send the next step of each unfinished run of `runs`; returns those it sent.

    The step follows the run's last recorded event: if another process is taking it
    (a distributed worker), the second delivery does nothing (steps are addressed by
    version)."""
    sent = []
    for stream in runs:
        last = store.last_record(stream)
        if last is not None and last.type != "run.finished":
            bus.send(LAB_STEP_TASK, stream, last.version)
            sent.append(stream)
    return sent
