"""A campaign's curves: one line per run, named, its text escaped, drawn even for one point."""

from datetime import UTC, datetime

from labrxiv.html_plots import lines_plot
from labrxiv.web.curves import curve_svg
from projections.curves import CurvePoint


def _point(lab: str, attempt: int, best: float) -> CurvePoint:
    return CurvePoint(
        position=attempt,
        run=f"run-c-{lab}",
        task="t",
        lab=lab,
        campaign="c",
        attempt=attempt,
        at=datetime(2026, 3, 1, tzinfo=UTC),
        elapsed_s=10.0 * attempt,
        tokens=100 * attempt,
        cost_usd=0.01 * attempt,
        unknown_cost_calls=0,
        compute_seconds=1.0,
        score=best,
        normalized_score=best,
        best_so_far=best,
    )


def test_each_run_is_a_line_named_in_the_legend() -> None:
    points = [_point("lab-0", 1, 0.2), _point("lab-1", 1, 0.5), _point("lab-0", 2, 0.4)]
    svg = curve_svg(points, "attempts")
    assert svg.count("<polyline") == 2
    assert svg.count("<circle") == 3, "every point is drawn, a line of one point too"
    assert "<title>lab-0</title>" in svg and "<title>lab-1</title>" in svg
    assert "scored attempts" in svg


def test_runs_that_used_no_model_have_no_token_or_dollar_curve_but_the_reason() -> None:
    """As `labrxiv curves` says it: a stack of points at 0 would read as "it cost nothing"."""
    points = [
        _point("lab-0", n, 0.1 * n).model_copy(update={"tokens": 0, "cost_usd": 0.0})
        for n in (1, 2)
    ]
    for axis, said in (("tokens", "No model tokens were used"), ("dollars", "No model dollars")):
        svg = curve_svg(points, axis)
        assert "<polyline" not in svg and said in svg
    assert "<polyline" in curve_svg(points, "attempts")


def test_a_run_with_calls_of_unknown_price_is_left_out_of_the_dollars_curve() -> None:
    points = [
        _point("lab-0", 1, 0.2),
        _point("lab-1", 1, 0.5).model_copy(update={"unknown_cost_calls": 2}),
    ]
    svg = curve_svg(points, "dollars")
    assert "<title>lab-0</title>" in svg and "lab-1" not in svg
    assert "1 runs with calls of unknown price left out" in svg
    assert "<title>lab-1</title>" in curve_svg(points, "tokens")


def test_names_from_the_log_are_escaped() -> None:
    svg = lines_plot("t", "x", "y", {"<script>x</script>": [(0.0, 1.0)]})
    assert "<script>" not in svg and "&lt;script&gt;x&lt;/script&gt;" in svg


def test_nothing_to_draw_says_so() -> None:
    assert "nothing to draw" in lines_plot("t", "x", "y", {"lab-0": []})
