"""The curves read model: efficiency points per scored attempt and the AgentRxiv paper curve."""

from collections.abc import Iterator

import pytest
from handmade_log import RunLog, at, build, interleave, rows, snapshot

from events import Event
from projections.curves import (
    CURVE_RUNS,
    CurvesProjector,
    curve_points,
    paper_points,
)
from projections.runner import ProjectionRunner


def curves_log() -> list[Event]:
    """Campaign c1: labs a and b; campaign c2: lab c on a task without SOTA; lone lab d."""
    a = RunLog("a", "lab-a", campaign="c1")
    b = RunLog("b", "lab-b", campaign="c1")
    c = RunLog("c", "lab-c", campaign="c2")
    d = RunLog("d", "lab-d")
    a.start(0)
    c.start(0)
    d.start(0)
    c.score(1, 3.0, None, 1)
    d.paper("p-d1", 1)
    b.start(2)
    c.score(2, 5.0, None, 2)
    d.paper("p-d2", 2)
    a.tool("call-1", "evaluate", 1, 2.0)
    a.score(1, 0.2, 0.25, 3)
    c.paper("p-c1", 3)
    a.tool("call-2", "evaluate", 4, 4.0)
    b.paper("p-b0", 5)  # before b has any score
    b.tool("call-1", "evaluate", 6, 1.0)
    a.score(2, 0.1, 0.125, 8)
    b.score(1, 0.7, 0.75, 9)
    a.paper("p-a1", 10)
    a.tool("call-3", "python", 11, 0.5)
    a.score(3, 0.45, 0.5, 12)
    b.paper("p-b1", 15)
    a.paper("p-a2", 20)
    a.finish(21)
    return interleave(a, b, c, d)


@pytest.fixture(params=[1, 3, None], ids=["page-of-1", "pages-of-3", "at-once"])
def curves(store_url: str, request: pytest.FixtureRequest) -> Iterator[ProjectionRunner]:
    runner = build(store_url, curves_log(), step=request.param)
    yield runner
    runner.store.engine.dispose()


def test_a_point_per_scored_attempt(curves: ProjectionRunner) -> None:
    with curves.store.engine.connect() as conn:
        points = curve_points(conn)
        only_c2 = curve_points(conn, campaign="c2")
    found = [
        (p.run, p.lab, p.campaign, p.attempt, p.elapsed_s, p.compute_seconds, p.score)
        + (p.normalized_score, p.best_so_far, p.tokens, p.cost_usd)
        for p in points
    ]
    assert found == [
        ("run-c", "lab-c", "c2", 1, 1.0, 0.0, 3.0, None, 3.0, 0, 0.0),
        ("run-c", "lab-c", "c2", 2, 2.0, 0.0, 5.0, None, 5.0, 0, 0.0),
        ("run-a", "lab-a", "c1", 1, 3.0, 2.0, 0.2, 0.25, 0.25, 0, 0.0),
        ("run-a", "lab-a", "c1", 2, 8.0, 6.0, 0.1, 0.125, 0.25, 0, 0.0),
        ("run-b", "lab-b", "c1", 1, 7.0, 1.0, 0.7, 0.75, 0.75, 0, 0.0),
        ("run-a", "lab-a", "c1", 3, 12.0, 6.5, 0.45, 0.5, 0.5, 0, 0.0),
    ]
    assert points[2].at == at(3) and points[2].task == "digits"
    assert [p.position for p in points] == sorted(p.position for p in points)
    assert [(p.run, p.attempt) for p in only_c2] == [("run-c", 1), ("run-c", 2)]


def test_a_paper_point_numbered_in_its_campaign(curves: ProjectionRunner) -> None:
    with curves.store.engine.connect() as conn:
        papers = paper_points(conn)
        only_c1 = paper_points(conn, campaign="c1")
    found = [
        (p.paper_id, p.campaign, p.paper_index, p.run, p.lab, p.elapsed_s, p.attempts)
        + (p.best_so_far,)
        for p in papers
    ]
    assert found == [
        ("p-d1", None, 1, "run-d", "lab-d", 1.0, 0, None),
        ("p-d2", None, 2, "run-d", "lab-d", 2.0, 0, None),
        ("p-c1", "c2", 1, "run-c", "lab-c", 3.0, 2, 5.0),
        ("p-b0", "c1", 1, "run-b", "lab-b", 3.0, 0, None),
        ("p-a1", "c1", 2, "run-a", "lab-a", 10.0, 2, 0.25),
        ("p-b1", "c1", 3, "run-b", "lab-b", 13.0, 1, 0.75),
        ("p-a2", "c1", 4, "run-a", "lab-a", 20.0, 3, 0.5),
    ]
    assert [p.paper_index for p in only_c1] == [1, 2, 3, 4]


def test_run_totals(curves: ProjectionRunner) -> None:
    keys = ("run", "lab", "campaign", "attempts", "compute_seconds", "best_so_far", "papers")
    assert [tuple(r[k] for k in keys) for r in rows(curves.store, CURVE_RUNS)] == [
        ("run-a", "lab-a", "c1", 3, 6.5, 0.5, 2),
        ("run-b", "lab-b", "c1", 1, 1.0, 0.75, 2),
        ("run-c", "lab-c", "c2", 2, 0.0, 5.0, 1),
        ("run-d", "lab-d", None, 0, 0.0, None, 2),
    ]


def test_rebuild_equals_the_incremental_curves(curves: ProjectionRunner) -> None:
    tables = CurvesProjector().tables
    incremental = snapshot(curves.store, tables)
    curves.rebuild()
    assert snapshot(curves.store, tables) == incremental
