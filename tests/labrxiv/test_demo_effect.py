"""`labrxiv demo` states what holds over many seeds: the archive's effect the task bundle
records (`bench/archive_vs_isolated.py --record`), with its spread and where it comes
from, run on the budget it was measured on and drawn with this run over it; a task with
no record says this run is one seed and how to measure more."""

import os
import shutil
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analysis.archive_effect import RECORD, ArchiveEffect, paired, read_effect, relative_gain
from events import EventStore
from labrxiv.cli import app
from workers.gym.registry import builtin_gym_dir

pytestmark = pytest.mark.slow


def _effect(task: str) -> ArchiveEffect:
    isolated = [0.80, 0.82, 0.79, 0.81, 0.80]
    archive = [0.86, 0.85, 0.79, 0.88, 0.84]
    return ArchiveEffect(
        task=task,
        seeds=5,
        labs=2,
        papers=1,
        attempts=2,
        primary="final_accuracy",
        metric="accuracy",
        direction="maximize",
        measured_at="2026-11-28T20:00:00+00:00",
        commit="abc1234",
        frontier=paired(archive, isolated),
        frontier_raw=paired(archive, isolated),
        labs_best=paired([0.7] * 5, [0.6] * 5),
        per_paper={"isolated": [[v] for v in isolated], "archive": [[v] for v in archive]},
    )


def _bundle(gym: Path, task: str) -> Path:
    """A copy of continual-digits under another id."""
    folder = gym / task
    shutil.copytree(builtin_gym_dir() / "continual-digits", folder)
    card = folder / "task.toml"
    card.write_text(card.read_text().replace('id = "continual-digits"', f'id = "{task}"'))
    assert tomllib.loads(card.read_text())["id"] == task
    return folder


def _demo(tmp_path: Path, *args: str) -> tuple[str, str]:
    env = {k: None for k in os.environ if k.startswith("LABRXIV_")}
    env |= {"LABRXIV_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "200"}
    report = tmp_path / "report"
    result = CliRunner().invoke(
        app, ["demo", "--gym-path", str(tmp_path / "gym"), "--report", str(report), *args], env=env
    )
    assert result.exit_code == 0, result.output
    return result.output, (report / "summary.md").read_text()


def test_the_demo_runs_the_measured_budget_and_states_the_effect_with_its_spread(
    tmp_path: Path,
) -> None:
    folder = _bundle(tmp_path / "gym", "digits-measured")
    effect = _effect("digits-measured")
    (folder / RECORD).write_text(effect.model_dump_json())
    output, summary = _demo(tmp_path, "--task", "digits-measured")
    said = effect.said()
    assert "Over 5 seeds" in said and "ahead on 4 seeds, behind on 0, tied on 1" in said
    assert f"{effect.gain:+.1%} relative" in said and "commit abc1234" in said
    assert said in summary and "not the one measured" not in summary
    assert "Over 5 seeds" in " ".join(output.split())
    assert (tmp_path / "report" / "archive_effect.png").stat().st_size > 0
    assert "archive_effect.png" in summary
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'data' / 'demo' / 'labrxiv.db'}")
    runs = store.read_records(types=["run.started"])
    assert len(runs) == 2 * effect.labs, "the labs the effect was measured with"
    assert {r.payload["budget"]["attempts"] for r in runs} == {effect.attempts}
    assert {r.payload["papers"] for r in runs} == {effect.papers}


def test_a_demo_on_another_budget_says_it_is_not_the_one_measured(tmp_path: Path) -> None:
    folder = _bundle(tmp_path / "gym", "digits-measured")
    (folder / RECORD).write_text(_effect("digits-measured").model_dump_json())
    _, summary = _demo(tmp_path, "--task", "digits-measured", "--attempts", "1")
    assert "is not the one measured" in summary
    assert "one seed of" not in summary, "a run on another budget is no seed of the measurement"
    assert "2 labs, 1 paper, 1 attempt a lab" in summary
    assert "2 labs per campaign, 1 paper and 1 graded attempt per lab" in summary
    assert "this run is not drawn" in summary
    assert "-0.000" not in summary


def test_a_task_with_no_recorded_effect_says_how_to_measure_it(tmp_path: Path) -> None:
    _bundle(tmp_path / "gym", "digits-unmeasured")
    _, summary = _demo(
        tmp_path, "--task", "digits-unmeasured", "--labs", "2", "--papers", "1", "--attempts", "2"
    )
    assert "No archive effect over many seeds is recorded for digits-unmeasured" in summary
    assert "--record" in summary
    assert not (tmp_path / "report" / "archive_effect.png").exists()


def test_a_broken_record_is_said_in_one_line_and_the_demo_runs_without_it(
    tmp_path: Path,
) -> None:
    folder = _bundle(tmp_path / "gym", "digits-broken")
    (folder / RECORD).write_text('{"task": "digits-broken", "seeds": "many"}')
    output, summary = _demo(
        tmp_path, "--task", "digits-broken", "--labs", "2", "--papers", "1", "--attempts", "2"
    )
    said = [line for line in output.splitlines() if "not a recorded archive effect" in line]
    assert len(said) == 1 and "archive_effect.json" in said[0], output
    assert "Traceback" not in output
    assert "No archive effect over many seeds is recorded for digits-broken" in summary


def test_a_record_of_another_task_is_said_and_not_used(tmp_path: Path) -> None:
    folder = _bundle(tmp_path / "gym", "digits-copied")
    (folder / RECORD).write_text(_effect("continual-digits").model_dump_json())
    output, summary = _demo(
        tmp_path, "--task", "digits-copied", "--labs", "2", "--papers", "1", "--attempts", "2"
    )
    assert "records continual-digits's final_accuracy, not digits-copied's" in output
    assert "No archive effect over many seeds is recorded for digits-copied" in summary


def test_a_record_reads_back_and_gains_follow_the_metrics_direction(tmp_path: Path) -> None:
    effect = _effect("t")
    (tmp_path / "baselines").mkdir()
    (tmp_path / RECORD).write_text(effect.model_dump_json())
    assert read_effect(tmp_path) == effect
    assert read_effect(tmp_path / "baselines") is None
    assert relative_gain([0.9], [0.8], "maximize") == pytest.approx(0.125)
    assert relative_gain([0.4], [0.5], "minimize") == pytest.approx(0.2), "lower is the gain"
    mean, sd = effect.curve("archive")
    assert mean == [pytest.approx(0.844)] and sd[0] > 0
    assert paired([0.5, 0.5], [0.5, 0.5]).wilcoxon_p == 1.0, "every seed tied"
