"""`labrxiv demo --deterministic`: the labs take turns, so two demos with the same seed
write the same `report/summary.md`, byte for byte (timings go to `timings.md`); without
it the summary says the numbers depend on timing."""

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from events import EventStore
from labrxiv.cli import app
from workers.sandbox.backends import AUTO, choose

pytestmark = pytest.mark.slow
ARGS = ["demo", "--labs", "3", "--papers", "2", "--attempts", "3", "--seed", "11"]


def _demo(folder: Path, *extra: str) -> str:
    folder.mkdir()
    env = {k: None for k in os.environ if k.startswith("LABRXIV_")}
    env |= {"LABRXIV_DATA_DIR": str(folder / "data"), "COLUMNS": "200"}
    report = folder / "report"
    result = CliRunner().invoke(app, [*ARGS, "--report", str(report), *extra], env=env)
    assert result.exit_code == 0, result.output
    return (report / "summary.md").read_text()


def test_two_deterministic_demos_with_one_seed_write_the_same_summary(tmp_path: Path) -> None:
    first = _demo(tmp_path / "one", "--deterministic")
    second = _demo(tmp_path / "two", "--deterministic")
    assert first == second
    assert "took turns" in first and "seconds" not in first
    assert "wall seconds per paper" in (tmp_path / "one" / "report" / "timings.md").read_text()
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'one' / 'data' / 'demo' / 'labrxiv.db'}")
    started = store.read_records(types=["campaign.started"])
    assert [r.payload["deterministic"] for r in started] == [True, True]
    # Each run says which sandbox its tools ran in: the one `auto` chose here.
    runs = store.read_records(types=["run.started"])
    assert {r.payload["sandbox"] for r in runs} == {choose(AUTO).backend}


def test_a_demo_that_was_not_deterministic_says_so(tmp_path: Path) -> None:
    summary = _demo(tmp_path / "one")
    assert "depended on timing" in summary and "--deterministic" in summary
