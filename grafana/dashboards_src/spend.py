"""Spend: tokens and dollars by model and lab, burn rate, budget left, unknown costs."""

from grafanalib.core import Dashboard, Stat, Table, TimeSeries

from grafana.dashboards_src.common import POSTGRES, PROMETHEUS, RATE, prom, sql
from grafana.dashboards_src.common import dashboard as layout

SPEND_BY_LAB = """
SELECT coalesce(lab, 'none') AS lab, count(*) AS runs, sum(tokens) AS tokens,
       sum(cost_usd) AS dollars, sum(unknown_cost_calls) AS unknown_cost_calls
FROM curve_runs
GROUP BY 1
ORDER BY 4 DESC, 1
"""
"""Each lab's tokens and known dollars over all its runs (`curve_runs`): the metrics'
tokens have no `lab` label, and their labs are bounded (`--labs`)."""


def dashboard() -> Dashboard:
    """The Spend dashboard."""
    return layout(
        "labrxiv: Spend",
        "labrxiv-spend",
        "Tokens and dollars by model and lab, burn rate, budget left, unknown-cost calls.",
        [
            (
                Stat(
                    title="Burn rate",
                    description="Dollars per hour at known prices, every model and lab.",
                    dataSource=PROMETHEUS,
                    targets=[prom(f"sum(rate(labrxiv_model_cost_dollars_total[{RATE}])) * 3600")],
                    format="currencyUSD",
                    graphMode="area",
                ),
                6,
            ),
            (
                Stat(
                    title="Dollars in range",
                    dataSource=PROMETHEUS,
                    targets=[
                        prom(
                            "sum(increase(labrxiv_model_cost_dollars_total[$__range]))",
                            instant=True,
                        )
                    ],
                    format="currencyUSD",
                ),
                6,
            ),
            (
                Stat(
                    title="Tokens in range",
                    dataSource=PROMETHEUS,
                    targets=[
                        prom("sum(increase(labrxiv_model_tokens_total[$__range]))", instant=True)
                    ],
                    format="short",
                ),
                6,
            ),
            (
                Stat(
                    title="Unknown-cost calls",
                    description="Calls and gradings with no known price or usage: never $0.",
                    dataSource=PROMETHEUS,
                    targets=[prom("sum(labrxiv_model_unknown_cost_calls_total)")],
                    format="short",
                ),
                6,
            ),
            (
                TimeSeries(
                    title="Tokens by model and kind",
                    description="Tokens per second; cached_input is part of input, "
                    "reasoning part of output.",
                    dataSource=PROMETHEUS,
                    targets=[
                        prom(
                            f"sum by (model, kind) (rate(labrxiv_model_tokens_total[{RATE}]))",
                            "{{model}} {{kind}}",
                        )
                    ],
                    unit="short",
                ),
                12,
            ),
            (
                TimeSeries(
                    title="Dollars per hour by model and lab",
                    dataSource=PROMETHEUS,
                    targets=[
                        prom(
                            "sum by (model, lab) "
                            f"(rate(labrxiv_model_cost_dollars_total[{RATE}])) * 3600",
                            "{{model}} {{lab}}",
                        )
                    ],
                    unit="currencyUSD",
                    stacking={"mode": "normal", "group": "A"},
                    fillOpacity=30,
                ),
                12,
            ),
            (
                Stat(
                    title="Campaign budget left",
                    description="Limit minus used, per campaign and budget (0 once used up).",
                    dataSource=PROMETHEUS,
                    targets=[
                        prom(
                            'labrxiv_campaign_budget_left{budget="dollars"}',
                            "{{campaign}} $",
                            instant=True,
                        )
                    ],
                    format="currencyUSD",
                    orientation="horizontal",
                ),
                8,
            ),
            (
                Stat(
                    title="Campaign tokens left",
                    dataSource=PROMETHEUS,
                    targets=[
                        prom(
                            'labrxiv_campaign_budget_left{budget="tokens"}',
                            "{{campaign}}",
                            instant=True,
                        )
                    ],
                    format="short",
                    orientation="horizontal",
                ),
                8,
            ),
            (
                TimeSeries(
                    title="Unknown-cost calls by model and lab",
                    dataSource=PROMETHEUS,
                    targets=[
                        prom(
                            "sum by (model, lab) (labrxiv_model_unknown_cost_calls_total)",
                            "{{model}} {{lab}}",
                        )
                    ],
                    unit="short",
                ),
                8,
            ),
            (
                Table(
                    title="Spend by lab (read models)",
                    description="Every run of each lab, from curve_runs; dollars at known "
                    "prices only.",
                    dataSource=POSTGRES,
                    targets=[sql(SPEND_BY_LAB)],
                    unit="short",
                    overrides=[
                        {
                            "matcher": {"id": "byName", "options": "dollars"},
                            "properties": [{"id": "unit", "value": "currencyUSD"}],
                        }
                    ],
                ),
                24,
            ),
        ],
    )
