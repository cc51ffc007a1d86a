"""The report's plots: a plot with nothing to show is left out, with a sentence saying why.

Points are built by hand (`CurvePoint`), not by running a campaign.
"""

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes

from analysis.campaign_summary import CampaignSummary, summarize_campaign
from labrxiv.demo import DemoResult, write_report
from labrxiv.plots import Plot, nothing_to_show, write_curves
from projections.curves import CurvePoint, PaperPoint

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PNG = b"\x89PNG\r\n\x1a\n"
EFFICIENCY = ("best_vs_time.png", "best_vs_attempts.png")
MODEL = ("best_vs_tokens.png", "best_vs_cost.png")


def point(
    run: str, attempt: int, best: float, tokens: int = 0, cost: float = 0.0, campaign: str = "c1"
) -> CurvePoint:
    """A scored attempt of `run` (lab `lab-<run>`) at `10 × attempt` seconds."""
    return CurvePoint(
        position=attempt,
        run=run,
        task="digits",
        lab=f"lab-{run}",
        campaign=campaign,
        attempt=attempt,
        at=T0 + timedelta(seconds=10 * attempt),
        elapsed_s=10.0 * attempt,
        tokens=tokens,
        cost_usd=cost,
        unknown_cost_calls=0,
        compute_seconds=2.0 * attempt,
        score=best,
        normalized_score=best,
        best_so_far=best,
    )


def with_unknown_cost(p: CurvePoint, calls: int) -> CurvePoint:
    """`p` with `calls` model calls of unknown price."""
    return p.model_copy(update={"unknown_cost_calls": calls})


def paper(run: str, index: int, best: float | None, campaign: str = "c1") -> PaperPoint:
    return PaperPoint(
        position=100 + index,
        paper_id=f"p-{run}{index}",
        campaign=campaign,
        paper_index=index,
        run=run,
        task="digits",
        lab=f"lab-{run}",
        at=T0 + timedelta(seconds=60 * index),
        elapsed_s=60.0 * index,
        attempts=index,
        best_so_far=best,
    )


SEARCH_POINTS = [point("a", 1, 0.2), point("a", 2, 0.5), point("b", 1, 0.4)]
"""A search-policy campaign: scored attempts, no model tokens or dollars."""
PAPERS = [paper("a", 1, 0.5), paper("b", 2, 0.4)]


def by_file(plots: list[Plot]) -> dict[str, Plot]:
    return {p.file: p for p in plots}


@pytest.mark.parametrize(
    ("xs", "empty"),
    [
        ([], "no points"),
        ([0.0], "all zero"),
        ([0, 0.0, 0], "all zero"),
        ([0, 3], None),
        ([5], None),
    ],
)
def test_nothing_to_show(xs: list[float], empty: str | None) -> None:
    assert nothing_to_show(xs) == empty


def test_search_policy_report_leaves_out_tokens_and_cost(tmp_path: Path) -> None:
    (tmp_path / "best_vs_tokens.png").write_bytes(PNG)  # an earlier report's flat plot
    plots = by_file(write_curves(SEARCH_POINTS, PAPERS, tmp_path, by="campaign"))
    written = {p.name for p in tmp_path.iterdir()}
    assert written == {*EFFICIENCY, "best_per_paper.png"}
    for name in written:
        assert plots[name].drawn and plots[name].note is None
        assert (tmp_path / name).read_bytes().startswith(PNG)
    tokens, cost = plots["best_vs_tokens.png"], plots["best_vs_cost.png"]
    assert not tokens.drawn and not cost.drawn
    assert tokens.note is not None and tokens.note.startswith("No model tokens were used")
    assert tokens.note.endswith("so best score against tokens is not drawn.")
    assert cost.note is not None and cost.note.startswith("No model dollars were spent")
    assert cost.note.endswith("so best score against cost is not drawn.")
    assert tokens.markdown() == tokens.note


def test_real_tokens_and_cost_are_drawn(tmp_path: Path) -> None:
    points = [point("a", 1, 0.2, 1200, 0.01), point("a", 2, 0.6, 5400, 0.05)]
    plots = by_file(write_curves(points, PAPERS, tmp_path))
    for name in MODEL:
        assert plots[name].drawn and plots[name].note is None, name
        assert plots[name].markdown() == f"![{name}]({name})"
        assert (tmp_path / name).read_bytes().startswith(PNG)


def test_a_single_point_away_from_zero_is_drawn(tmp_path: Path) -> None:
    plots = write_curves([point("a", 1, 0.3, 800, 0.002)], [paper("a", 1, 0.3)], tmp_path)
    assert all(p.drawn for p in plots), plots


def test_no_scored_attempt_leaves_out_every_plot(tmp_path: Path) -> None:
    plots = by_file(write_curves([], [paper("a", 1, None)], tmp_path))
    assert not list(tmp_path.iterdir())
    for name in (*EFFICIENCY, *MODEL):
        assert plots[name].note is not None
        assert plots[name].note.startswith("No attempt has been scored yet, so best score")
    assert plots["best_per_paper.png"].note == (
        "No paper has a scored attempt behind it yet, so best score per paper (AgentRxiv) "
        "is not drawn."
    )


def test_runs_of_unknown_cost_are_left_out_of_the_cost_plot(tmp_path: Path) -> None:
    known = [point("a", 1, 0.2, 1000, 0.01), point("a", 2, 0.6, 3000, 0.03)]
    unknown = [with_unknown_cost(point("b", 1, 0.9, 2000, 0.0), 2)]
    plots = by_file(write_curves(known + unknown, PAPERS, tmp_path))
    cost = plots["best_vs_cost.png"]
    assert cost.drawn and (tmp_path / "best_vs_cost.png").is_file()
    assert cost.note == (
        "Left out of best score against cost: lab-b, whose runs made 2 model calls of "
        "unknown price up to their last scored attempt (the ledger counts them all), so "
        "their dollars are not known."
    )
    assert cost.markdown().endswith(cost.note)
    assert plots["best_vs_tokens.png"].note is None, "tokens of unknown price still count"


def test_cost_plot_left_out_when_no_run_has_a_known_cost(tmp_path: Path) -> None:
    points = [with_unknown_cost(point("b", 1, 0.9, 2000, 0.0), 3)]
    cost = by_file(write_curves(points, PAPERS, tmp_path))["best_vs_cost.png"]
    assert not cost.drawn and not (tmp_path / "best_vs_cost.png").exists()
    assert cost.note == (
        "Every run here made model calls of unknown price (3 calls up to its last scored "
        "attempt), so best score "
        "against cost is not drawn."
    )


def test_write_curves_still_writes_every_file(tmp_path: Path) -> None:
    """`labrxiv curves --out` asks for every PNG: an empty one carries its reason inside."""
    written = [tmp_path / p.file for p in write_curves(SEARCH_POINTS, PAPERS, tmp_path, every=True)]
    assert {p.name for p in written} == {*EFFICIENCY, *MODEL, "best_per_paper.png"}
    assert all(p.read_bytes().startswith(PNG) for p in written)


def summary(campaign: str) -> CampaignSummary:
    return CampaignSummary(
        campaign=campaign,
        mode=campaign,
        best_per_paper=[0.4, 0.5],
        best_score=0.5,
        best_per_lab=[0.5, 0.4],
        over_baseline=0.3,
        seconds=120.0,
        compute_seconds=10.0,
        papers=2,
    )


def test_demo_summary_says_why_a_plot_is_missing(tmp_path: Path) -> None:
    plots = write_curves(SEARCH_POINTS, PAPERS, tmp_path, by="campaign")
    result = DemoResult(summary("isolated"), summary("archive"), tmp_path)
    write_report(result, "digits", 2, 2, 2, 0, plots)
    text = (tmp_path / "summary.md").read_text()
    assert "![best_vs_time.png](best_vs_time.png)" in text
    assert "![best_per_paper.png](best_per_paper.png)" in text
    assert "best_vs_tokens.png" not in text and "best_vs_cost.png" not in text
    assert "so best score against tokens is not drawn." in text
    assert "so best score against cost is not drawn." in text
    # The sentence stands where the plot would have been: between attempts and paper.
    order = [
        text.index("best_vs_attempts.png"),
        text.index("against tokens is not drawn"),
        text.index("against cost is not drawn"),
        text.index("best_per_paper.png"),
    ]
    assert order == sorted(order)


def test_a_minimized_raw_score_is_drawn_as_its_best_so_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of a task with no SOTA (raw scores) that minimize an error: the campaign's
    lines fall from 3.0 to 2.0, as its summary's best per paper does (`runstate.best`)."""
    drawn: dict[tuple[str, str], list[float]] = {}
    plot = Axes.plot

    def recorded(self: Axes, xs: list[float], ys: list[float], **kw: Any) -> Any:
        drawn[(self.get_title(), kw["label"])] = list(ys)
        return plot(self, xs, ys, **kw)

    monkeypatch.setattr(Axes, "plot", recorded)
    raw = [
        point("a", 1, 3.0).model_copy(update={"normalized_score": None}),
        point("b", 2, 2.0).model_copy(update={"normalized_score": None}),
    ]
    papers = [paper("a", 1, 3.0), paper("b", 2, 2.0)]
    minimized = {"a": "minimize", "b": "minimize"}
    write_curves(raw, papers, tmp_path, by="campaign", directions=minimized)  # type: ignore[arg-type]
    summary = summarize_campaign(
        "c1", "archive", papers, raw, "minimize", lambda x: 0.0, seconds=1, compute_seconds=0
    )
    assert summary.best_per_paper == [3.0, 2.0]
    assert drawn[("best score per paper (AgentRxiv)", "c1")] == [3.0, 2.0]
    assert drawn[("best score against attempts", "c1")] == [3.0, 2.0]
