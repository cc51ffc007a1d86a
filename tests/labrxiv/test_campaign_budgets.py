"""A task card's budgets apply to every run on the task unless the command sets its own,
and `run.started` records what applies and where each limit came from.

Found running labrxiv from outside: continual-digits' card says 20 attempts and 900
seconds, yet `run.started` recorded the CLI's attempts default and no wall-time limit,
so no run of any task had one unless `--wall-seconds` was given."""

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from cli_support import Cli

from events import Event, EventStore
from events.payloads import Budget, RunStarted
from labrxiv.settings import load_settings
from projections.catalogue import all_projectors
from projections.metrics import Bounds, ResearchCollector
from projections.runner import ProjectionRunner
from workers.gym.card import Budgets
from workers.lab import step
from workers.lab.budget import run_budget
from workers.lab.fork import fork_budget


@pytest.fixture
def hour_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every lab step takes place an hour after its run started: past any wall-time limit
    under an hour, without waiting for it."""
    now: Callable[[], datetime] = step.utcnow
    monkeypatch.setattr(step, "utcnow", lambda: now() + timedelta(hours=1))


def _run(data: Path) -> list[Event]:
    store = EventStore.from_url(load_settings(data_dir=data).store_url, create=False)
    (started,) = store.read_records(types=["run.started"])
    return store.read_stream(started.stream)


@pytest.mark.usefixtures("hour_later")
def test_a_campaign_runs_within_its_cards_budgets(workdir: Path, cli: Cli) -> None:
    said = cli(
        "campaign", "--task", "continual-digits", "--labs", "1", "--papers", "1",
        LABRXIV_DATA_DIR=str(workdir / "data"),
    )  # fmt: skip
    assert said.code == 0, said.out
    events = _run(workdir / "data")
    started = events[0].payload
    assert started.budget == Budget(attempts=20, wall_seconds=900)  # the card's
    assert started.budget_source == {"attempts": "card", "wall_seconds": "card"}
    exceeded, finished = events[-2].payload, events[-1].payload
    assert exceeded.type == "budget.exceeded"
    assert (exceeded.budget, exceeded.limit) == ("wall_seconds", 900)
    assert (finished.reason, finished.detail) == ("budget", "wall_seconds limit")
    assert [e.type for e in events].count("tool.invoked") == 0, "no step ran past the limit"
    # The exporter shows the card's limits, as it shows any the run has.
    store = EventStore.from_url(load_settings(data_dir=workdir / "data").store_url, create=False)
    ProjectionRunner(store, all_projectors()).catch_up()
    limits = {
        s.labels["budget"]
        for metric in ResearchCollector(store.engine, Bounds()).collect()
        for s in metric.samples
        if s.name == "labrxiv_run_budget_left"
    }
    assert limits == {"attempts", "wall_seconds"}


@pytest.mark.usefixtures("hour_later")
def test_the_commands_budgets_win_over_the_cards(workdir: Path, cli: Cli) -> None:
    said = cli(
        "campaign", "--task", "continual-digits", "--labs", "1", "--papers", "1",
        "--attempts", "5", "--wall-seconds", "1800", "--steps", "40",
        LABRXIV_DATA_DIR=str(workdir / "data"),
    )  # fmt: skip
    assert said.code == 0, said.out
    events = _run(workdir / "data")
    started = events[0].payload
    assert started.budget == Budget(attempts=5, wall_seconds=1800, steps=40)
    assert started.budget_source == {
        "attempts": "command",
        "wall_seconds": "command",
        "steps": "command",
    }
    assert (events[-2].payload.budget, events[-2].payload.limit) == ("wall_seconds", 1800)
    assert events[-1].payload.reason == "budget"


def test_each_limit_is_the_commands_else_the_cards() -> None:
    card = Budgets(attempts=20, wall_seconds=900, tokens=50_000)
    budget, source = run_budget(card, Budget(attempts=3, dollars=1.5))
    assert budget == Budget(attempts=3, wall_seconds=900, tokens=50_000, dollars=1.5)
    assert source == {
        "attempts": "command",
        "wall_seconds": "card",
        "tokens": "card",
        "dollars": "command",
    }
    assert run_budget(None, Budget(steps=4)) == (Budget(steps=4), {"steps": "command"})


def test_a_fork_keeps_its_runs_limits_and_their_sources_unless_given_its_own() -> None:
    parent = RunStarted(
        task="continual-digits",
        lab="lab-0",
        policy="search",
        budget=Budget(attempts=20, wall_seconds=900, steps=50),
        budget_source={"attempts": "card", "wall_seconds": "card", "steps": "command"},
    )
    budget, source = fork_budget(parent, Budget(attempts=30, tokens=9000))
    assert budget == Budget(attempts=30, wall_seconds=900, steps=50, tokens=9000)
    assert source == {
        "attempts": "command",
        "wall_seconds": "card",
        "steps": "command",
        "tokens": "command",
    }


def test_a_source_is_only_recorded_for_a_limit_the_run_has() -> None:
    with pytest.raises(ValueError, match="budget_source names limits the budget does not set"):
        RunStarted(task="t", lab="lab-0", policy="search", budget_source={"wall_seconds": "card"})
