"""What a fork stands on (`runstate.fork.inherited`): its parent's events up to the fork
point, after what the parent stood on in turn."""

from datetime import UTC, datetime, timedelta

from events import Event
from events.ids import new_id
from events.payloads import ExperimentScored, ForkPoint, Payload, RunStarted
from runstate.fork import inherited

T0 = datetime(2026, 2, 1, tzinfo=UTC)


def stream(run: str, payloads: list[Payload]) -> list[Event]:
    return [
        Event(id=new_id(), stream=run, version=v, occurred_at=T0 + timedelta(seconds=v), payload=p)
        for v, p in enumerate(payloads)
    ]


def started(parent: str | None = None, version: int = 0) -> RunStarted:
    point = ForkPoint(run=parent, step=0, version=version) if parent else None
    return RunStarted(task="t", lab="a", policy="search", forked_from=point)


def scored(attempt: int) -> ExperimentScored:
    return ExperimentScored(attempt=attempt, subtask_scores={"s": 0.5}, score=0.5)


def test_a_fork_of_a_fork_stands_on_both_parents_cut_at_their_fork_points() -> None:
    log = {
        "run-a": stream("run-a", [started(), scored(1), scored(2)]),
        "run-b": stream("run-b", [started("run-a", 1), scored(2), scored(3)]),
    }
    fork = stream("run-c", [started("run-b", 1)])

    def load(run: str, version: int) -> list[Event]:
        return log[run][: version + 1]

    below = inherited(fork[0], load)
    assert [(e.stream, e.version) for e in below] == [
        ("run-a", 0),
        ("run-a", 1),
        ("run-b", 0),
        ("run-b", 1),
    ]
    assert inherited(log["run-a"][0], load) == []


def test_forks_that_go_round_in_a_circle_end_the_walk() -> None:
    """Only a forged log can hold it (a parent's events precede its fork's), but a read
    model folding it must not recurse without end."""
    log = {
        "run-a": stream("run-a", [started("run-b", 0), scored(1)]),
        "run-b": stream("run-b", [started("run-a", 1)]),
    }
    loads: list[str] = []

    def load(run: str, version: int) -> list[Event]:
        loads.append(run)
        return log[run][: version + 1]

    below = inherited(log["run-a"][0], load)
    assert loads == ["run-b"]
    assert [(e.stream, e.version) for e in below] == [("run-b", 0)]
