"""The campaigns read model: each campaign's start and end folded from its own events, in
pages of any size, shown beside its runs' rows; a campaign only its runs name is shown
from them."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from events import Event, EventStore
from events.ids import derived_id
from events.payloads import (
    CampaignFinished,
    CampaignStarted,
    ExperimentScored,
    Payload,
    RunFinished,
    RunStarted,
)
from projections.campaigns import CampaignInfo, CampaignsProjector, campaign_modes, campaigns_of
from projections.runner import ProjectionRunner
from projections.runs import RunsProjector

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _stream(stream: str, campaign: str, payloads: list[tuple[float, Payload]]) -> list[Event]:
    return [
        Event(
            id=derived_id(f"{stream}:{version}", T0 + timedelta(seconds=at)),
            stream=stream,
            version=version,
            occurred_at=T0 + timedelta(seconds=at),
            correlation_id=campaign,
            actor="lab-0",
            payload=payload,
        )
        for version, (at, payload) in enumerate(payloads)
    ]


def _run(lab: str) -> RunStarted:
    return RunStarted(task="continual-digits", lab=lab, policy="search")


def _scored(normalized: float) -> ExperimentScored:
    return ExperimentScored(
        attempt=1, subtask_scores={}, score=normalized, normalized_score=normalized
    )


def _log(store: EventStore) -> None:
    """Campaign `aa` (isolated, finished), `bb` (archive, running) and `cc` (no campaign
    events, its one run finished), their events interleaved as a live log has them."""
    aa = _stream(
        "campaign-aa",
        "aa",
        [(0, CampaignStarted(task="continual-digits", labs=2, mode="isolated"))],
    )
    bb = _stream(
        "campaign-bb", "bb", [(5, CampaignStarted(task="continual-digits", labs=1, mode="archive"))]
    )
    run_a0 = _stream(
        "run-aa-0", "aa", [(1, _run("lab-0")), (2, _scored(0.4)), (3, RunFinished(reason="done"))]
    )
    run_a1 = _stream("run-aa-1", "aa", [(1, _run("lab-1")), (2, _scored(0.7))])
    run_b0 = _stream("run-bb-0", "bb", [(6, _run("lab-0"))])
    run_c0 = _stream("run-cc-0", "cc", [(9, _run("lab-0")), (10, RunFinished(reason="budget"))])
    finished = Event(
        id=derived_id("campaign-aa:1", T0 + timedelta(seconds=4)),
        stream="campaign-aa",
        version=1,
        occurred_at=T0 + timedelta(seconds=4),
        correlation_id="aa",
        actor="labrxiv",
        payload=CampaignFinished(reason="done"),
    )
    for batch in (aa, run_a0[:2], run_a1, bb, run_a0[2:], [finished], run_b0, run_c0):
        store.append(batch)


@pytest.fixture
def store(store_url: str) -> EventStore:
    """The log, on SQLite and on PostgreSQL."""
    store = EventStore.from_url(store_url)
    _log(store)
    return store


def _shown(store: EventStore, page: int) -> list[CampaignInfo]:
    runner = ProjectionRunner(
        store, [RunsProjector(), CampaignsProjector()], page=page, batch_pages=1
    )
    runner.catch_up()
    with store.engine.connect() as conn:
        return campaigns_of(conn)


def test_each_campaign_is_shown_from_its_events_and_its_runs(store: EventStore) -> None:
    aa, bb, cc = _shown(store, page=1000)
    assert aa == CampaignInfo(
        campaign="aa",
        task="continual-digits",
        mode="isolated",
        policy="search",
        labs=2,
        runs=2,
        status="finished",
        finish_reason="done",
        best=0.7,
        started_at=T0,
    )
    assert (bb.mode, bb.labs, bb.status, bb.finish_reason, bb.best) == (
        "archive",
        1,
        "running",
        None,
        None,
    )
    assert bb.started_at == T0 + timedelta(seconds=5)
    assert cc == CampaignInfo(
        campaign="cc",
        task="continual-digits",
        mode=None,
        policy="search",
        labs=1,
        runs=1,
        status="finished",
        finish_reason=None,
        best=None,
        started_at=T0 + timedelta(seconds=9),
    )
    with store.engine.connect() as conn:
        assert campaign_modes(conn) == {"aa": "isolated", "bb": "archive"}


@pytest.mark.parametrize("page", [1, 2, 3])
def test_any_paging_folds_the_same_rows(store: EventStore, tmp_path: Path, page: int) -> None:
    whole = EventStore.from_url(f"sqlite:///{tmp_path / 'whole.db'}")
    _log(whole)
    assert _shown(store, page) == _shown(whole, 1000)


def test_bests_of_several_directions_are_folded_in_stream_order(store: EventStore) -> None:
    """Runs whose bests rank in different directions are compared as `best_ranked` does,
    each in its own, in stream order: 0.4 (normalized), then 0.2 (raw, lower is better)
    beats it, then 0.3 (normalized) beats that."""
    loss = ExperimentScored(
        attempt=1, subtask_scores={"loss": 0.2}, score=0.2, directions={"loss": "minimize"}
    )
    scores: list[ExperimentScored] = [_scored(0.4), loss, _scored(0.3)]
    for lab, scored in enumerate(scores):
        store.append(_stream(f"run-mm-{lab}", "mm", [(0, _run(f"lab-{lab}")), (1, scored)]))
    (mixed,) = [c for c in _shown(store, page=1000) if c.campaign == "mm"]
    assert (mixed.runs, mixed.best) == (3, 0.3)
