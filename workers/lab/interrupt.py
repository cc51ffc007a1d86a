"""Interrupting a campaign's runs and taking them up again.

An interruption is recorded as a `campaign.interrupted` naming the runs a stop left
unfinished. Its id is derived from those runs and the last version of each, so
recording the same stop twice (a second Ctrl-C, a retried command) keeps one event; a
stop after the runs moved on is another interruption, with another id.
"""

from collections.abc import Iterable

from events import Event, EventStore
from events.ids import derived_id, utcnow
from events.payloads import CampaignInterrupted
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
    """Append `campaign.interrupted` naming `runs` to the campaign's stream; False when
    the log holds this interruption already (the runs have not moved since)."""
    stream = campaign_stream(campaign)
    lasts = [(run, store.last_record(run)) for run in runs]
    seed = ",".join(f"{run}@{last.version if last else -1}" for run, last in lasts)
    times = [last.occurred_at for _, last in lasts if last is not None]
    now = utcnow()
    event = Event(
        id=derived_id(f"{stream}:interrupted:{seed}", max(times, default=now)),
        stream=stream,
        version=store.stream_version(stream) + 1,
        occurred_at=now,
        correlation_id=campaign,
        actor=ACTOR,
        payload=CampaignInterrupted(runs=runs, detail=detail),
    )
    return bool(store.append([event]).appended)


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
