"""Reactions to recorded events: schedule each run's next step; close finished campaigns
(every reaction: `workers.reactions.REACTIONS`).

Sent by the reactor (`workers.reactor`) from the log. Both are idempotent: a step is
addressed by the version it follows, and a campaign's `campaign.finished` has an id
derived from the campaign, so doing either twice is harmless.
"""

from collections.abc import Sequence

from events import Event, EventStore
from events.ids import utcnow
from events.payloads import CampaignFinished, CampaignStarted
from events.recorded import Recorded
from events.streams import RUN_PREFIX, campaign_stream, event_id_at
from workers.bus.base import Bus, publish
from workers.lab.step import LAB_STEP_TASK


def schedule_next_steps(store: EventStore, bus: Bus, recorded: Sequence[Recorded]) -> None:
    """Send the next step of every run that moved and is neither finished nor stopped (a
    run whose last event is `run.interrupted` waits to be resumed: `labrxiv resume` or a
    reaper sends its step)."""
    last: dict[str, Recorded] = {}
    for event in recorded:
        if event.stream.startswith(RUN_PREFIX):
            last[event.stream] = event
    finished_in: set[str] = set()
    for stream, event in last.items():
        if event.type == "run.finished":
            if event.correlation_id:
                finished_in.add(event.correlation_id)
        elif event.type != "run.interrupted":
            bus.send(LAB_STEP_TASK, stream, event.version)
    # Once per campaign, not once per finished run: a batch that finishes many runs of
    # one campaign read the campaign's stream for each (half the recorder's time at
    # 500-event batches, bench/ingest.py).
    for campaign in sorted(finished_in):
        close_campaign_if_done(store, bus, campaign)


def close_campaign_if_done(store: EventStore, bus: Bus, campaign: str) -> None:
    """Append `campaign.finished` once every run of the campaign has finished."""
    stream = campaign_stream(campaign)
    events = store.read_stream(stream)
    if not events or any(e.type == "campaign.finished" for e in events):
        return
    started = events[0].payload
    reviewed = isinstance(started, CampaignStarted) and started.review is not None
    types = ["run.started", "run.finished"]
    types += ["paper.submitted", "paper.decided", "review.stopped"] if reviewed else []
    mine = list(store.iter_records(types=types, correlation=campaign))
    runs = {r.stream for r in mine if r.type == "run.started"}
    done = {r.stream for r in mine if r.type == "run.finished"}
    if len(runs) < getattr(started, "labs", 0) or runs - done:
        return
    # A campaign that reviews its papers ends with its last decision.
    papers = {r.payload["paper_id"] for r in mine if r.type == "paper.submitted"}
    ended = {"paper.decided", "review.stopped"}  # a stopped review is done with too
    if papers - {r.payload["paper_id"] for r in mine if r.type in ended}:
        return
    reasons = {r.payload["reason"] for r in mine if r.type == "run.finished"}
    version = events[-1].version + 1
    finished = Event(
        id=event_id_at(stream, version, events[0].occurred_at),
        stream=stream,
        version=version,
        occurred_at=utcnow(),
        correlation_id=campaign,
        actor="labrxiv",
        payload=CampaignFinished(reason="done" if reasons <= {"done", "budget"} else "error"),
    )
    publish(bus, [finished])
