"""What every dashboard shares: the provisioned data sources, targets, and the layout."""

import attr
from grafanalib.core import Dashboard, GridPos, Panel, SqlTarget, Target, Time

PROMETHEUS = {"type": "prometheus", "uid": "labrxiv-prometheus"}
"""grafana/provisioning/datasources/labrxiv.yaml: the research and system metrics."""
POSTGRES = {"type": "grafana-postgresql-datasource", "uid": "labrxiv-postgres"}
"""The same file: the read models, read with the `grafana_reader` role."""

RATE = "$__rate_interval"
"""Grafana's window for `rate()`: at least four scrape intervals (`timeInterval` 15s)."""

HEIGHT = 8
ROW_WIDTH = 24


def prom(expr: str, legend: str = "", ref: str = "A", instant: bool = False) -> Target:
    """A PromQL target on the provisioned Prometheus."""
    return Target(expr=expr, legendFormat=legend, refId=ref, instant=instant, datasource=PROMETHEUS)


def sql(raw: str, ref: str = "A", time_series: bool = False) -> SqlTarget:
    """A SQL target on the read models. A time series query names its time column `time`
    and filters it with `$__timeFilter(column)`."""
    return SqlTarget(
        rawSql=" ".join(raw.split()),
        format="time_series" if time_series else "table",
        refId=ref,
        datasource=POSTGRES,
    )


@attr.s
class XYChart(Panel):
    """Grafana's XY chart (grafanalib has none): one numeric column against another."""

    x = attr.ib(default="", validator=attr.validators.instance_of(str))
    """The column on the x axis; the other numeric columns are plotted against it."""
    unit = attr.ib(default="none", validator=attr.validators.instance_of(str))

    def to_json_data(self) -> dict[str, object]:
        return self.panel_json(
            {
                "type": "xychart",
                "fieldConfig": {
                    "defaults": {
                        "unit": self.unit,
                        "custom": {"show": "points", "pointSize": {"fixed": 5}},
                    }
                },
                "options": {
                    "seriesMapping": "auto",
                    "dims": {"x": self.x},
                    "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                    "tooltip": {"mode": "single", "sort": "none"},
                },
            }
        )


def dashboard(title: str, uid: str, description: str, panels: list[tuple[Panel, int]]) -> Dashboard:
    """A dashboard of `panels` (each with its width out of 24), laid out left to right
    and top to bottom, with ids numbered in order."""
    placed = []
    x = y = 0
    for panel, width in panels:
        if x + width > ROW_WIDTH:
            x, y = 0, y + HEIGHT
        placed.append(attr.evolve(panel, gridPos=GridPos(h=HEIGHT, w=width, x=x, y=y)))
        x += width
    return Dashboard(
        title=title,
        uid=uid,
        description=description,
        tags=["labrxiv"],
        timezone="utc",
        time=Time("now-6h", "now"),
        refresh="30s",
        editable=False,
        panels=placed,
    ).auto_panel_ids()
