"""A real campaign on the embedded system: every read model agrees with the log it came from,
and a rebuild from position 0 reproduces the incrementally built rows."""

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from handmade_log import rows, snapshot

from events.recorded import Recorded
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from projections.archive import PAPER_CITATIONS, PAPER_RETRIEVALS, PAPERS
from projections.archive_search import search_papers
from projections.archive_top import top_papers
from projections.catalogue import all_projectors
from projections.curves import CURVE_RUNS, curve_points, paper_points
from projections.ledger import LEDGER, ledger_totals
from projections.runs import RunView, runs_of
from workers.lab.archive_log import LogArchive
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.tools.env import ArchiveScope


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Embedded, str]]:
    """Three labs writing three papers each on a shared archive, projected page by page."""
    data = Path(tmp_path_factory.mktemp("campaign")) / "data"
    system = open_embedded(load_settings(data_dir=data), threads=3)
    system.runner.page = 7  # many page boundaries
    plan = CampaignPlan(
        task="continual-digits", labs=3, papers=3, mode="archive", seed=1, attempts=6
    )
    campaign_id, _runs = start_campaign(system.bus, plan)
    system.bus.join()
    assert not system.bus.failures
    system.runner.catch_up()
    yield system, campaign_id
    system.close()


def log_of(system: Embedded, *types: str) -> list[Recorded]:
    return system.store.read_records(limit=1_000_000, types=list(types))


@pytest.mark.slow
def test_archive_matches_the_log(campaign: tuple[Embedded, str]) -> None:
    system, campaign_id = campaign
    submitted = log_of(system, "paper.submitted")
    assert len(submitted) == 9
    papers = {r["paper_id"]: r for r in rows(system.store, PAPERS)}
    assert set(papers) == {e.payload["paper_id"] for e in submitted}
    per_run: dict[str, int] = defaultdict(int)
    for event in submitted:
        row = papers[event.payload["paper_id"]]
        per_run[event.stream] += 1
        assert (row["run"], row["lab"], row["campaign"]) == (
            event.stream,
            event.actor,
            campaign_id,
        )
        assert (row["title"], row["body"]) == (event.payload["title"], event.payload["body"])
        assert row["claims"] == event.payload["claims"]
        assert row["position"] == event.position and row["version"] == 1
        assert row["number_in_run"] == per_run[event.stream]
    cited = {(e.payload["paper_id"], c) for e in submitted for c in e.payload["cited"]}
    assert cited, "labs in archive mode should build on each other's papers"
    assert {(r["paper_id"], r["cited_id"]) for r in rows(system.store, PAPER_CITATIONS)} == cited
    retrieved = [
        (e.position, rank, paper_id, e.stream, e.payload["query"])
        for e in log_of(system, "papers.retrieved")
        for rank, paper_id in enumerate(e.payload["paper_ids"], start=1)
    ]
    assert retrieved
    keys = ("event_position", "rank", "paper_id", "run", "query")
    found = [tuple(r[k] for k in keys) for r in rows(system.store, PAPER_RETRIEVALS)]
    assert found == retrieved


@pytest.mark.slow
def test_search_and_top_agree_with_the_labs_archive(campaign: tuple[Embedded, str]) -> None:
    system, _ = campaign
    labs_view = LogArchive(system.store)
    with system.store.engine.connect() as conn:
        for query in ("final_accuracy replay herding", "hidden_units epochs", "baseline setup"):
            hits = search_papers(conn, query, task="continual-digits", k=6)
            assert hits, query
            shown = labs_view.search(ArchiveScope("continual-digits"), query, 6)
            assert [h.paper.paper_id for h in hits] == [p.paper_id for p in shown][: len(hits)]
        (best,) = top_papers(conn, "continual-digits", k=1, subtask="final_accuracy")
    claimed = [
        c["value"]
        for e in log_of(system, "paper.submitted")
        for c in e.payload["claims"]
        if c["subtask"] == "final_accuracy"
    ]
    assert best.value == max(claimed)


@pytest.mark.slow
def test_curves_and_ledger_match_the_log(campaign: tuple[Embedded, str]) -> None:
    system, campaign_id = campaign
    events = log_of(
        system, "run.started", "tool.invoked", "tool.returned", "experiment.scored"
    ) + log_of(system, "paper.submitted")
    events.sort(key=lambda e: e.position)
    started: dict[str, Recorded] = {}
    compute: dict[str, float] = defaultdict(float)
    best: dict[str, float] = {}
    expected_points, expected_papers, calls = [], [], set()
    for e in events:
        if e.type == "run.started":
            started[e.stream] = e
        elif e.type == "tool.invoked":
            calls.add((e.stream, e.payload["call_id"]))
        elif e.type == "tool.returned":
            compute[e.stream] += e.payload["duration_s"]
        elif e.type == "experiment.scored":
            best[e.stream] = max(best.get(e.stream, 0.0), e.payload["normalized_score"])
            elapsed = (e.occurred_at - started[e.stream].occurred_at).total_seconds()
            expected_points.append(
                (e.stream, e.payload["attempt"], elapsed, compute[e.stream], best[e.stream])
            )
        else:
            expected_papers.append((e.payload["paper_id"], best.get(e.stream)))
    with system.store.engine.connect() as conn:
        points = curve_points(conn, campaign=campaign_id)
        papers = paper_points(conn, campaign=campaign_id)
        per_run = {t.key: t for t in ledger_totals(conn, by="run", campaign=campaign_id)}
        (whole,) = ledger_totals(conn, by="campaign", campaign=campaign_id)
    assert len(points) == 18  # 3 labs x 6 attempts
    found = [(p.run, p.attempt, p.elapsed_s, p.compute_seconds, p.best_so_far) for p in points]
    assert found == expected_points  # the same sums in the same order: equal to the bit
    assert all(p.tokens == 0 and p.cost_usd == 0.0 for p in points)  # no model events yet
    assert [(p.paper_id, p.best_so_far) for p in papers] == expected_papers
    assert [p.paper_index for p in papers] == list(range(1, 10))

    assert {(r["run"], r["call_id"]) for r in rows(system.store, LEDGER)} == calls
    assert all(r["status"] == "returned" for r in rows(system.store, LEDGER))
    assert whole.calls == len(calls) and whole.model_calls == 0
    totals = {r["run"]: r["compute_seconds"] for r in rows(system.store, CURVE_RUNS)}
    for run, seconds in compute.items():
        assert per_run[run].compute_seconds == pytest.approx(seconds)
        assert totals[run] == pytest.approx(seconds)


@pytest.mark.slow
def test_runs_match_the_log(campaign: tuple[Embedded, str]) -> None:
    system, campaign_id = campaign
    streams: dict[str, list[Recorded]] = defaultdict(list)
    for event in system.store.read_records(limit=1_000_000, correlation=campaign_id):
        if event.stream.startswith("run-"):
            streams[event.stream].append(event)
    expected = []
    for stream, events in sorted(streams.items()):
        types = [e.type for e in events]
        scores = [e.payload["normalized_score"] for e in events if e.type == "experiment.scored"]
        started, last = events[0], events[-1]
        assert (started.type, last.type) == ("run.started", "run.finished")
        expected.append(
            RunView(
                stream=stream,
                task="continual-digits",
                lab=started.payload["lab"],
                policy="search",
                campaign=campaign_id,
                status="finished",
                finish_reason=last.payload["reason"],
                event_count=len(events),
                steps=types.count("tool.invoked"),
                attempts=len(scores),
                papers=types.count("paper.submitted"),
                best_score=max(scores),
                best_direction="maximize",
                first_event_at=started.occurred_at,
                wall_started_at=started.occurred_at,
                last_event_at=last.occurred_at,
                last_position=last.position,
            )
        )
    with system.store.engine.connect() as conn:
        found = runs_of(conn, campaign=campaign_id)
    assert found == expected
    assert [(r.attempts, r.papers) for r in found] == [(6, 3)] * 3  # the plan's budgets
    assert all(r.steps > r.attempts for r in found)  # writes, searches, papers are steps too


@pytest.mark.slow
def test_rebuild_reproduces_every_read_model(campaign: tuple[Embedded, str]) -> None:
    system, _ = campaign
    tables = [table for projector in all_projectors() for table in projector.tables]
    incremental = snapshot(system.store, tables)
    assert all(incremental[name] for name in ("papers", "ledger", "curve_points", "runs"))
    system.runner.page = 5000
    system.runner.rebuild()
    assert snapshot(system.store, tables) == incremental


@pytest.mark.slow
def test_a_round_that_found_nothing_better_says_so_instead_of_restating_the_best(
    campaign: tuple[Embedded, str],
) -> None:
    """A search lab's round that did not beat its best wrote that best again, title and
    claims alike: `papers top` listed the same result twice. Such a round's paper names
    the best that stands and claims what the round itself measured."""
    system, _campaign_id = campaign
    by_run: dict[str, list[Recorded]] = defaultdict(list)
    for event in log_of(system, "paper.submitted"):
        by_run[event.stream].append(event)
    no_gain = 0
    for papers in by_run.values():
        told = [(p.payload["title"], repr(p.payload["claims"])) for p in papers]
        assert len(set(told)) == len(told), "a run restated a paper"
        best = None
        for paper in papers:
            claimed = [
                c["value"] for c in paper.payload["claims"] if c["subtask"] == "final_accuracy"
            ]
            if "no gain over final_accuracy" in paper.payload["title"]:
                no_gain += 1
                assert best is not None and f"{best:.4f}" in paper.payload["title"]
                assert all(value <= best for value in claimed)
            elif claimed:
                assert best is None or claimed[0] > best  # a paper that moved the best on
                best = claimed[0]
    assert no_gain, "no round of this campaign failed to improve: the case is not exercised"
