"""One run looked at closely (`labrxiv runs show`): its events by type, how it ended, its
scored attempts and its papers, from its stream and the archive read model."""

from collections import Counter
from dataclasses import dataclass

from sqlalchemy import Connection

from events import EventStore
from projections.archive import PaperSummary, list_papers
from projections.runs import RunView


@dataclass(frozen=True)
class Attempt:
    """One scored experiment of the run (the grader's, never the lab's own number)."""

    attempt: int
    score: float
    normalized_score: float | None


@dataclass(frozen=True)
class RunDetail:
    """What `runs show` adds to the run's row."""

    events: dict[str, int]
    """Events of the run's stream, by type."""
    finish_detail: str | None
    """What `run.finished` said about the end (e.g. the error), if it ended."""
    attempts: list[Attempt]
    papers: list[PaperSummary]
    reported: int = 0
    """Tool calls an agent reported (its own tools ran them; `tool.invoked` counts them
    beside the run's own tool calls)."""


def run_detail(store: EventStore, conn: Connection, run: RunView) -> RunDetail:
    """The run's stream read once (a run's stream is thousands of events at most)."""
    kinds: Counter[str] = Counter()
    finish: str | None = None
    attempts = []
    reported = 0
    for record in store.iter_records(stream=run.stream):
        kinds[record.type] += 1
        payload = record.payload
        if record.type == "tool.invoked":
            reported += bool(payload.get("reported"))
        elif record.type == "run.finished":
            finish = payload.get("detail") or None
        elif record.type == "experiment.scored":
            attempts.append(
                Attempt(payload["attempt"], payload["score"], payload.get("normalized_score"))
            )
    papers = [
        p for p in list_papers(conn, campaign=run.campaign, lab=run.lab) if p.run == run.stream
    ]
    return RunDetail(dict(kinds), finish, attempts, papers, reported)
