"""A simulated run: a fixed-shape stream of events, for exercising the write path.

This is not a research agent and no policy of the registry: its runs are labelled
`policy="simulated"` in every event it writes. It exists so the tests and benchmarks can
drive the log, bus, recorder and projections with events of every type.
Its ids are derived from the run and version, so publishing it twice changes nothing.
"""

import random
from collections.abc import Iterator
from datetime import datetime, timedelta

from events import Event
from events.payloads import (
    Budget,
    ExperimentScored,
    Payload,
    RunFinished,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from events.streams import event_id_at, run_stream


def simulated_run(
    run_id: str,
    start: datetime,
    attempts: int = 5,
    seed: int = 0,
    task: str = "simulated-task",
    campaign: str | None = None,
) -> Iterator[Event]:
    """The events of one simulated run, in version order."""
    rng = random.Random(f"{run_id}:{seed}")
    stream = run_stream(run_id)
    lab = f"lab-{run_id}"
    clock = start
    version = 0

    def make(payload: Payload) -> Event:
        nonlocal version, clock
        clock += timedelta(seconds=rng.uniform(0.5, 5.0))
        event = Event(
            id=event_id_at(stream, version, clock),
            stream=stream,
            version=version,
            occurred_at=clock,
            correlation_id=campaign,
            actor=lab,
            payload=payload,
        )
        version += 1
        return event

    yield make(
        RunStarted(
            task=task, lab=lab, policy="simulated", seed=seed, budget=Budget(attempts=attempts)
        )
    )
    score = rng.uniform(0.2, 0.4)
    for attempt in range(1, attempts + 1):
        call = f"call-{attempt}"
        yield make(ToolInvoked(call_id=call, tool="python", args={"script": "train.py"}))
        yield make(
            ToolReturned(
                call_id=call,
                tool="python",
                exit_code=0,
                duration_s=round(rng.uniform(0.1, 3.0), 3),
                preview=f"epoch {attempt}: loss {rng.uniform(0.1, 1.0):.3f}",
            )
        )
        score = min(1.0, score + rng.uniform(-0.05, 0.15))
        yield make(
            ExperimentScored(
                attempt=attempt,
                subtask_scores={"accuracy": round(score, 4)},
                score=round(score, 4),
                normalized_score=round(score / 0.95, 4),
            )
        )
    yield make(RunFinished(reason="done", detail=f"simulated: {attempts} attempts"))
