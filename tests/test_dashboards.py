"""Grafana's dashboards: the committed JSON is what grafana/dashboards_src/
generates; every panel has a unique id, a provisioned data source and a unit; every
metric a PromQL query names is exported (docs/metrics.md); every SQL query runs against
the read models of a real campaign and returns rows."""

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import create_engine, text

from grafana.build import DASHBOARDS, OUT, render
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from tests.needs import missing
from workers.lab.campaign import CampaignPlan, start_campaign

ROOT = Path(__file__).resolve().parent.parent
PROVISIONING = ROOT / "grafana" / "provisioning" / "datasources"
METRICS_DOC = (ROOT / "docs" / "metrics.md").read_text()
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")

PLAN = CampaignPlan(task="continual-digits", labs=2, papers=1, mode="archive", seed=3, attempts=3)
"""A small offline campaign: search labs, no model, so nothing leaves the machine."""


def dashboards() -> dict[str, dict[str, Any]]:
    return {name: json.loads((OUT / f"{name}.json").read_text()) for name in DASHBOARDS}


def panels() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, dashboard in dashboards().items():
        for panel in dashboard["panels"]:
            yield f"{name}: {panel['title']}", panel


def targets(panel: dict[str, Any]) -> list[dict[str, Any]]:
    return panel.get("targets") or []


def provisioned() -> dict[str, str]:
    """uid -> type of every provisioned data source."""
    return {
        source["uid"]: source["type"]
        for file in sorted(PROVISIONING.glob("*.yaml"))
        for source in yaml.safe_load(file.read_text())["datasources"]
    }


def exported() -> dict[str, str]:
    """name -> type of every metric docs/metrics.md lists in its tables."""
    rows = re.findall(r"^\| `(labrxiv_[a-z_]+)` \| (\w+) \|", METRICS_DOC, re.MULTILINE)
    return dict(rows)


def sql_queries() -> list[tuple[str, str, str]]:
    """(where, SQL, Grafana's result format) of every SQL target."""
    return [
        (where, target["rawSql"], target["format"])
        for where, panel in panels()
        for target in targets(panel)
        if "rawSql" in target
    ]


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_committed_json_is_what_the_source_generates(name: str) -> None:
    committed = (OUT / f"{name}.json").read_text()
    assert committed == render(name), f"run `python -m grafana.build`: {name}.json is stale"


def test_only_generated_dashboards_are_committed() -> None:
    assert sorted(p.stem for p in OUT.glob("*.json")) == sorted(DASHBOARDS)


def test_panel_ids_and_dashboard_uids_are_unique() -> None:
    uids = [dashboard["uid"] for dashboard in dashboards().values()]
    assert len(set(uids)) == len(uids), uids
    for name, dashboard in dashboards().items():
        ids = [panel["id"] for panel in dashboard["panels"]]
        assert all(isinstance(i, int) for i in ids), name
        assert len(set(ids)) == len(ids), f"{name}: panel ids {ids}"


def test_every_data_source_is_provisioned() -> None:
    sources = provisioned()
    for where, panel in panels():
        for ref in [panel["datasource"], *(t.get("datasource") for t in targets(panel))]:
            assert isinstance(ref, dict), f"{where}: no data source"
            assert ref.get("uid") in sources, f"{where}: data source {ref} is not provisioned"
            assert ref.get("type") == sources[ref["uid"]], f"{where}: {ref}"
        assert targets(panel), f"{where}: no query"
        for target in targets(panel):
            kind = sources[target["datasource"]["uid"]]
            assert ("rawSql" in target) == (kind != "prometheus"), f"{where}: {target}"
            assert target.get("rawSql") or target.get("expr"), f"{where}: empty query"


def test_every_metric_named_is_exported() -> None:
    metrics = exported()
    assert len(metrics) > 20, "docs/metrics.md's tables were not read"
    named = set()
    for where, panel in panels():
        for target in targets(panel):
            for name in re.findall(r"\blabrxiv_[a-z_]+", target.get("expr", "")):
                base = next((name[: -len(s)] for s in HISTOGRAM_SERIES if name.endswith(s)), "")
                if name not in metrics and metrics.get(base) == "histogram":
                    name = base
                assert name in metrics, f"{where}: {name} is not in docs/metrics.md"
                named.add(name)
    # The System dashboard reads the histograms: the suffix handling above is exercised.
    assert {"labrxiv_step_duration_seconds", "labrxiv_runs"} <= named


def test_every_promql_expression_parses(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        missing("promtool is missing: install Debian's prometheus package (.ci/run does)")
    # Grafana's interval variables as Prometheus would receive them once Grafana filled them.
    exprs = [
        target["expr"].replace("$__rate_interval", "1m").replace("$__range", "6h")
        for _, panel in panels()
        for target in targets(panel)
        if "rawSql" not in target
    ]
    assert exprs and not any("$" in expr for expr in exprs), exprs
    rules = [{"record": f"labrxiv:dashboard_{i}", "expr": e} for i, e in enumerate(exprs)]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "d", "rules": rules}]}))
    result = subprocess.run(
        [promtool, "check", "rules", str(tmp_path / "rules.yml")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_panel_has_a_unit() -> None:
    for where, panel in panels():
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
        assert isinstance(unit, str) and unit, f"{where}: no unit"


def plain_sql(query: str) -> str:
    """`query` with Grafana's macros replaced by the SQL they stand for over the
    dashboards' default range (the last 6 hours)."""
    query = re.sub(
        r"\$__timeFilter\((\w+)\)",
        r"\1 BETWEEN now() - interval '6 hours' AND now() + interval '1 minute'",
        query,
    )
    assert "$" not in query, f"a macro the test does not know: {query}"
    return query


@pytest.mark.postgres
@pytest.mark.slow
def test_every_sql_query_returns_rows_from_a_campaigns_read_models(
    tmp_path: Path, pg_url: str
) -> None:
    queries = sql_queries()
    assert queries, "no SQL panel"
    system = open_embedded(load_settings(data_dir=tmp_path / "data", database_url=pg_url))
    try:
        _campaign, runs = start_campaign(system.bus, PLAN)
        system.settle()
        assert not system.bus.failures
        system.runner.catch_up()
        assert system.store.read_stream(runs[-1])[-1].type == "run.finished"
    finally:
        system.close()

    engine = create_engine(pg_url)
    try:
        with engine.connect() as conn:
            empty = []
            for where, query, form in queries:
                result = conn.execute(text(plain_sql(query)))
                if form == "time_series":  # Grafana's PostgreSQL source needs a `time` column
                    assert "time" in result.keys(), f"{where}: no time column"
                if not result.fetchall():
                    empty.append(where)
            assert not empty, f"no rows: {empty}"
    finally:
        engine.dispose()
