"""Hand-made run streams for read-model tests: every time and number chosen by the test.

Imported by the read-model tests by its bare name (pytest puts this folder on the path).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Table, select

from events import Event, EventStore
from events.ids import derived_id
from events.payloads import (
    Claim,
    ExperimentScored,
    ForkPoint,
    PapersRetrieved,
    PaperSubmitted,
    Payload,
    RunFinished,
    RunInterrupted,
    RunResumed,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from projections.catalogue import all_projectors
from projections.runner import ProjectionRunner

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
"""Second 0 of every hand-made log."""


def at(seconds: float) -> datetime:
    """`seconds` after T0."""
    return T0 + timedelta(seconds=seconds)


@dataclass
class RunLog:
    """One run's stream, built event by event with explicit times."""

    run_id: str
    lab: str
    campaign: str | None = None
    task: str = "digits"
    events: list[Event] = field(default_factory=list)

    @property
    def stream(self) -> str:
        return f"run-{self.run_id}"

    def add(self, payload: Payload, seconds: float, actor: str | None = None) -> Event:
        """Append `payload` to the stream at `seconds` after T0."""
        version = len(self.events)
        event = Event(
            id=derived_id(f"{self.stream}:{version}", at(seconds)),
            stream=self.stream,
            version=version,
            occurred_at=at(seconds),
            correlation_id=self.campaign,
            actor=actor or self.lab,
            payload=payload,
        )
        self.events.append(event)
        return event

    def start(self, seconds: float = 0.0) -> Event:
        return self.add(RunStarted(task=self.task, lab=self.lab, policy="handmade"), seconds)

    def tool(
        self, call_id: str, tool: str, seconds: float, duration: float, exit_code: int = 0
    ) -> list[Event]:
        """A tool call: invoked at `seconds`, returned `duration` later."""
        return [
            self.add(ToolInvoked(call_id=call_id, tool=tool), seconds),
            self.add(
                ToolReturned(call_id=call_id, tool=tool, exit_code=exit_code, duration_s=duration),
                seconds + duration,
            ),
        ]

    def invoke(self, call_id: str, tool: str, seconds: float) -> Event:
        """A tool call whose return never comes."""
        return self.add(ToolInvoked(call_id=call_id, tool=tool), seconds)

    def score(self, attempt: int, score: float, normalized: float | None, seconds: float) -> Event:
        payload = ExperimentScored(
            attempt=attempt,
            subtask_scores={"accuracy": score},
            score=score,
            normalized_score=normalized,
        )
        return self.add(payload, seconds, actor=f"grader:{self.task}")

    def paper(
        self,
        paper_id: str,
        seconds: float,
        title: str = "a paper",
        abstract: str = "",
        body: str = "",
        claims: Sequence[tuple[str, float, int | None]] = (),
        cited: Sequence[str] = (),
        revises: str | None = None,
        method: dict[str, Any] | None = None,
    ) -> Event:
        """A submitted paper; `claims` are (subtask, value, attempt), metric = subtask."""
        payload = PaperSubmitted(
            paper_id=paper_id,
            task=self.task,
            title=title,
            abstract=abstract,
            body=body,
            method=method or {},
            claims=[Claim(subtask=s, metric=s, value=v, attempt=a) for s, v, a in claims],
            cited=list(cited),
            revises=revises,
        )
        return self.add(payload, seconds)

    def retrieved(self, query: str, paper_ids: Sequence[str], seconds: float) -> Event:
        return self.add(PapersRetrieved(query=query, paper_ids=list(paper_ids)), seconds)

    def finish(self, seconds: float) -> Event:
        return self.add(RunFinished(reason="done"), seconds)


def interleave(*runs: RunLog) -> list[Event]:
    """Every run's events in time order (a stream's own order kept on equal times)."""
    return sorted((e for run in runs for e in run.events), key=lambda e: e.occurred_at)


def forked(stopped: bool = False) -> list[Event]:
    """Run a scores 0.9 at its 5th second of wall time (having stood stopped 100 s
    first, when `stopped`); fork f of it starts 5 s later, scores 0.3 three seconds after
    its start and submits a paper a second after that: as wall time, f scores at 8 s and
    submits at 9 s (its trajectory's 5 s, then its own)."""
    parent = RunLog("a", "lab-a", campaign="c1")
    parent.start(0)
    late = 0
    if stopped:
        parent.add(RunInterrupted(detail="Ctrl-C in labrxiv campaign"), 0.5)
        parent.add(RunResumed(), 100.5)
        late = 100
    parent.tool("c1", "evaluate", 1 + late, 1)
    parent.score(1, 0.9, 0.9, 5 + late)
    point = ForkPoint(run=parent.stream, step=1, version=len(parent.events) - 1)
    fork = RunLog("f", "lab-f", campaign="c1")
    started = RunStarted(task=fork.task, lab=fork.lab, policy="handmade", forked_from=point)
    fork.add(started, 10 + late)
    fork.tool("c2", "evaluate", 11 + late, 1)
    fork.score(2, 0.3, 0.3, 13 + late)
    fork.paper("p1", 14 + late)
    return interleave(parent, fork)


def build(store_url: str, events: Sequence[Event], step: int | None = None) -> ProjectionRunner:
    """Append `events` and project them.

    `step=None`: all in one batch, one catch-up. `step=n`: batches of n events, each
    followed by a catch-up in pages of n, so every read model is folded across many
    page boundaries (a call's return, a run's totals, a campaign's count in a later page).
    """
    store = EventStore.from_url(store_url)
    runner = ProjectionRunner(store, all_projectors(), page=step or 5000)
    size = step or max(1, len(events))
    for start in range(0, len(events), size):
        store.append(list(events[start : start + size]))
        if step is not None:
            runner.catch_up()
    runner.catch_up()
    return runner


def rows(store: EventStore, table: Table) -> list[dict[str, Any]]:
    """Every row of `table` in primary-key order, as dicts."""
    with store.engine.connect() as conn:
        query = select(table).order_by(*table.primary_key.columns)
        return [dict(row) for row in conn.execute(query).mappings()]


def snapshot(store: EventStore, tables: Sequence[Table]) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table: what must be equal after a rebuild."""
    return {table.name: rows(store, table) for table in tables}
