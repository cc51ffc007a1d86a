"""`labrxiv analyze RUN|CAMPAIGN`: behaviour, findings and the comparison of a campaign's
runs from the log, as tables, as JSON and as a file; what names nothing is one line."""

import json
from pathlib import Path

import numpy as np
import pytest
from cli_support import ARCHIVE, ISOLATED, Cli

from events import EventStore
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from workers.lab.campaign import CampaignPlan, start_campaign


def test_a_run_as_tables_and_as_json(two_campaigns: EventStore, cli: Cli) -> None:
    run = f"run-{ISOLATED}-0"
    said = cli("analyze", run)
    assert said.code == 0, said.out
    for shown in (f"behaviour of {run}", "tool mix", "useful window", "evaluate"):
        assert shown in said.text
    doc = json.loads(cli("analyze", f"{ISOLATED}-0", "--json").stdout)  # `run-` optional
    assert (doc["kind"], doc["target"], doc["schema"]) == ("run", run, 1)
    assert doc["campaign"] is None and doc["across"] is None
    (only,) = doc["runs"]
    b = only["behaviour"]
    assert (b["run"], b["finished"], b["density"]["actions"]) == (run, "done", 1)
    assert b["useful"]["best"] == 0.79 and b["time"]["by_tool_s"] == {"evaluate": 2.0}
    assert doc["findings_note"] is None
    assert only["findings"]["verdict"] in ("PASS", "SUSPICIOUS", "FAIL")
    bare = json.loads(cli("analyze", run, "--json", "--no-findings").stdout)
    assert bare["runs"][0]["findings"] is None and "not asked" in bare["findings_note"]
    assert bare["runs"][0]["behaviour"] == b


def test_a_campaign_compares_its_runs(two_campaigns: EventStore, cli: Cli) -> None:
    said = cli("analyze", ARCHIVE[:8])
    assert said.code == 0, said.out
    assert f"campaign {ARCHIVE}" in said.text and "1 run, best first" in said.text
    doc = json.loads(cli("analyze", ARCHIVE, "--json").stdout)
    assert (doc["kind"], doc["target"]) == ("campaign", ARCHIVE)
    assert [r["behaviour"]["run"] for r in doc["runs"]] == [f"run-{ARCHIVE}-0"]
    assert doc["campaign"]["finished"] == {"running": 1}
    assert [r["run"] for r in doc["across"]["runs"]] == [f"run-{ARCHIVE}-0"]
    for correlation in doc["across"]["correlations"]:
        assert correlation["pearson"] is None and "needs 3" in correlation["note"]


def test_out_writes_the_json(two_campaigns: EventStore, cli: Cli, workdir: Path) -> None:
    said = cli("analyze", ISOLATED, "--out", "analysis-out")
    assert said.code == 0, said.out
    written = json.loads((workdir / "analysis-out" / "analysis.json").read_text())
    assert written == json.loads(cli("analyze", ISOLATED, "--json").stdout)


def test_what_names_nothing_is_one_line(two_campaigns: EventStore, cli: Cli) -> None:
    for target, words in [("zzzz", "no run or campaign zzzz"), ("aaaa", "ambiguous")]:
        said = cli("analyze", target)
        assert said.code == 1, said.out
        assert words in said.text and "Traceback" not in said.out
        assert len(said.out.strip().splitlines()) == 1


@pytest.fixture
def three_labs(workdir: Path) -> tuple[str, Path]:
    """A finished offline campaign of three labs in `workdir/data`, read models caught up."""
    data = workdir / "data"
    system = open_embedded(load_settings(data_dir=data), threads=2)
    try:
        plan = CampaignPlan(
            task="continual-digits", labs=3, papers=1, mode="isolated", seed=2, attempts=2
        )
        campaign, _ = start_campaign(system.bus, plan)
        system.settle()
        system.runner.catch_up()
    finally:
        system.close()
    return campaign, data


def test_a_real_campaign_has_correlations(three_labs: tuple[str, Path], cli: Cli) -> None:
    campaign, data = three_labs
    said = cli("analyze", campaign, "--json", LABRXIV_DATA_DIR=str(data))
    assert said.code == 0, said.out
    doc = json.loads(said.stdout)
    assert len(doc["runs"]) == 3 and doc["campaign"]["finished"] == {"done": 3}
    density, cost = doc["across"]["correlations"]
    assert density["n"] == 3
    # Offline labs may tie on their best score (then there is nothing to correlate, and
    # the note says so); when they do not, the figure is the rows' own correlation.
    rows = doc["across"]["runs"]
    best, per_hour = [r["best"] for r in rows], [r["per_hour"] for r in rows]
    if len(set(best)) > 1:
        expected = float(np.corrcoef(per_hour, best)[0, 1])
        assert density["pearson"]["value"] == pytest.approx(expected)
    else:
        assert density["pearson"] is None and "same best" in density["note"]
    assert cost["pearson"] is None and "same dollars" in cost["note"]  # offline: $0 each
    table = cli("analyze", campaign, LABRXIV_DATA_DIR=str(data))
    assert table.code == 0 and "Pearson" in table.text and "3 runs, best first" in table.text
