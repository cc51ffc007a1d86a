"""Research: best scores over time, scores against what they cost, papers."""

from grafanalib.core import Dashboard, Stat, Table, TimeSeries

from grafana.dashboards_src.common import POSTGRES, PROMETHEUS, XYChart, prom, sql
from grafana.dashboards_src.common import dashboard as layout

BEST_OVER_TIME = """
SELECT at AS time, run AS metric, best_so_far AS best
FROM curve_points
WHERE $__timeFilter(at)
ORDER BY 1
"""
"""The best normalized score of each run after each scored attempt (`curve_points`)."""


def score_against(column: str) -> str:
    """Each scored attempt's normalized score (raw without SOTA) against what the run had
    used by then."""
    return f"""
SELECT {column}, coalesce(normalized_score, score) AS score
FROM curve_points
WHERE $__timeFilter(at)
ORDER BY 1
"""


PAPERS = """
SELECT submitted_at AS time, paper_id, task, lab, version, title
FROM papers
WHERE $__timeFilter(submitted_at)
ORDER BY position DESC
LIMIT 100
"""

PAPERS_OVER_TIME = """
SELECT at AS time, coalesce(campaign, 'none') AS metric, paper_index AS papers
FROM curve_papers
WHERE $__timeFilter(at)
ORDER BY 1
"""
"""The AgentRxiv curve: a campaign's papers in submission order."""

RUNS = """
SELECT stream AS run, lab, task, status, attempts, papers, best_score, last_event_at
FROM runs
ORDER BY last_position DESC
LIMIT 100
"""


def dashboard() -> Dashboard:
    """The Research dashboard."""
    return layout(
        "labrxiv: Research",
        "labrxiv-research",
        "Best score per run over time; score against tokens, cost and attempts; papers.",
        [
            (
                TimeSeries(
                    title="Best score per run (read models)",
                    description="curve_points: best normalized score after each attempt.",
                    dataSource=POSTGRES,
                    targets=[sql(BEST_OVER_TIME, time_series=True)],
                    unit="none",
                    showPoints="always",
                ),
                12,
            ),
            (
                TimeSeries(
                    title="Best score per run (metrics)",
                    description="labrxiv_run_best_normalized_score of the shown runs.",
                    dataSource=PROMETHEUS,
                    targets=[prom("labrxiv_run_best_normalized_score", "{{run}} {{task}}")],
                    unit="none",
                ),
                12,
            ),
            (
                XYChart(
                    title="Score against tokens",
                    dataSource=POSTGRES,
                    targets=[sql(score_against("tokens"))],
                    x="tokens",
                ),
                8,
            ),
            (
                XYChart(
                    title="Score against dollars",
                    description="Known costs only: a lower bound when calls had no price.",
                    dataSource=POSTGRES,
                    targets=[sql(score_against("cost_usd"))],
                    x="cost_usd",
                ),
                8,
            ),
            (
                XYChart(
                    title="Score against attempts",
                    dataSource=POSTGRES,
                    targets=[sql(score_against("attempt"))],
                    x="attempt",
                ),
                8,
            ),
            (
                TimeSeries(
                    title="Papers per campaign",
                    dataSource=POSTGRES,
                    targets=[sql(PAPERS_OVER_TIME, time_series=True)],
                    unit="short",
                    showPoints="always",
                ),
                12,
            ),
            (
                Stat(
                    title="Papers by task",
                    dataSource=PROMETHEUS,
                    targets=[prom("sum by (task) (labrxiv_papers_total)", "{{task}}")],
                    format="short",
                ),
                6,
            ),
            (
                Stat(
                    title="Run verdicts",
                    description="Runs by integrity verdict from their findings so far.",
                    dataSource=PROMETHEUS,
                    targets=[prom("sum by (verdict) (labrxiv_run_verdicts)", "{{verdict}}")],
                    format="short",
                ),
                6,
            ),
            (
                Table(
                    title="Papers",
                    description="The archive, newest first.",
                    dataSource=POSTGRES,
                    targets=[sql(PAPERS)],
                    unit="short",
                ),
                12,
            ),
            (
                Table(
                    title="Runs",
                    description="The runs read model, most recently moved first.",
                    dataSource=POSTGRES,
                    targets=[sql(RUNS)],
                    unit="short",
                ),
                12,
            ),
        ],
    )
