"""Labs: what the labs do, and how their runs stand."""

from grafanalib.core import BarChart, Dashboard, Stat, Table, TimeSeries

from grafana.dashboards_src.common import POSTGRES, PROMETHEUS, RATE, prom, sql
from grafana.dashboards_src.common import dashboard as layout

TOOL_MIX_BY_PHASE = """
SELECT coalesce(action.phase, 'none') AS phase, action.tool, count(*) AS calls
FROM behaviour_runs AS b,
     ROWS FROM (jsonb_array_elements_text(b.tally::jsonb -> 'action_tool'),
                jsonb_array_elements_text(b.tally::jsonb -> 'action_phase'))
     AS action(tool, phase)
GROUP BY 1, 2
ORDER BY 1, 3 DESC
"""
"""Tool calls by research phase over every run so far, from the behaviour read model (each
run's tally keeps the tool and the phase of every call, in call order); the "Tool mix"
panel shows the same split live, from `labrxiv_actions_total{phase}`."""

RUNS_BY_LAB = """
SELECT coalesce(lab, 'none') AS lab, status, count(*) AS runs,
       sum(steps) AS steps, sum(attempts) AS attempts, sum(papers) AS papers,
       coalesce(max(best_score) FILTER (WHERE best_direction IS DISTINCT FROM 'minimize'),
                min(best_score) FILTER (WHERE best_direction = 'minimize')) AS best_score
FROM runs
GROUP BY 1, 2
ORDER BY 1, 2
"""
"""Runs by lab and status; the best score of each group in its direction
(`runstate.best`): the highest normalized or maximized score, else the lowest raw one."""


def dashboard() -> Dashboard:
    """The Labs dashboard."""
    return layout(
        "labrxiv: Labs",
        "labrxiv-labs",
        "Action density per lab over time, tool mix by phase, runs by status.",
        [
            (
                TimeSeries(
                    title="Actions per lab",
                    description="Tool calls per second, by lab (labrxiv_actions_total).",
                    dataSource=PROMETHEUS,
                    targets=[
                        prom(f"sum by (lab) (rate(labrxiv_actions_total[{RATE}]))", "{{lab}}")
                    ],
                    unit="ops",
                ),
                16,
            ),
            (
                Stat(
                    title="Actions in range",
                    dataSource=PROMETHEUS,
                    targets=[prom("sum(increase(labrxiv_actions_total[$__range]))", instant=True)],
                    format="short",
                ),
                8,
            ),
            (
                BarChart(
                    title="Tool mix by phase",
                    description=(
                        "Tool calls by research phase over every run so far, from the "
                        "behaviour read model (none: labs without phases)."
                    ),
                    dataSource=POSTGRES,
                    targets=[sql(TOOL_MIX_BY_PHASE)],
                    transformations=[
                        {
                            "id": "groupingToMatrix",
                            "options": {
                                "columnField": "tool",
                                "rowField": "phase",
                                "valueField": "calls",
                            },
                        }
                    ],
                    stacking="normal",
                    extraJson={"fieldConfig": {"defaults": {"unit": "short"}}},
                ),
                12,
            ),
            (
                TimeSeries(
                    title="Tool mix",
                    description=(
                        "Tool calls per second, by research phase and tool "
                        "(labrxiv_actions_total; phase none: labs without phases)."
                    ),
                    dataSource=PROMETHEUS,
                    targets=[
                        prom(
                            f"sum by (phase, tool) (rate(labrxiv_actions_total[{RATE}]))",
                            "{{phase}} {{tool}}",
                        )
                    ],
                    unit="ops",
                    stacking={"mode": "normal", "group": "A"},
                    fillOpacity=30,
                ),
                12,
            ),
            (
                TimeSeries(
                    title="Runs by status",
                    description="labrxiv_runs, summed over finish reasons.",
                    dataSource=PROMETHEUS,
                    targets=[prom("sum by (status) (labrxiv_runs)", "{{status}}")],
                    unit="short",
                ),
                12,
            ),
            (
                TimeSeries(
                    title="Finished runs by reason",
                    dataSource=PROMETHEUS,
                    targets=[
                        prom(
                            'sum by (finish_reason) (labrxiv_runs{status="finished"})',
                            "{{finish_reason}}",
                        )
                    ],
                    unit="short",
                ),
                12,
            ),
            (
                Table(
                    title="Runs by lab and status",
                    description="The runs read model.",
                    dataSource=POSTGRES,
                    targets=[sql(RUNS_BY_LAB)],
                    unit="short",
                ),
                24,
            ),
        ],
    )
