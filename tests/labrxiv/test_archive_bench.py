"""`bench/archive_vs_isolated.py` on bad input: one line naming what is wrong, exit 1,
and nothing written into the bundle."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.archive_effect import RECORD
from workers.gym.registry import builtin_gym_dir

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[2] / "bench" / "archive_vs_isolated.py"


def _bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    env |= {"LABRXIV_GYM_PATH": f'["{tmp_path / "gym"}"]', "LABRXIV_DATA_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, str(BENCH), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def test_a_task_whose_solution_never_runs_is_one_line_and_records_nothing(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "gym" / "broken-digits"
    shutil.copytree(builtin_gym_dir() / "continual-digits", folder)
    card = folder / "task.toml"
    card.write_text(card.read_text().replace('id = "continual-digits"', 'id = "broken-digits"'))
    (folder / RECORD).unlink(missing_ok=True)
    solution = folder / "workspace" / "solution.py"
    solution.write_text('raise SystemExit("this solution cannot run")\n' + solution.read_text())
    done = _bench(
        tmp_path, "--task", "broken-digits", "--seeds", "1", "--labs", "1", "--papers", "1",
        "--attempts", "1", "--record",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "archive_vs_isolated: seed 0: no attempt of either campaign was graded (every "
        "evaluate failed); `labrxiv demo --task broken-digits` shows the tools' errors; "
        "nothing recorded"
    ], done.stderr
    assert not (folder / RECORD).exists()


def test_an_unknown_task_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "gym").mkdir()
    done = _bench(tmp_path, "--task", "no-such-task", "--seeds", "1")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("archive_vs_isolated: ") and "no-such-task" in done.stderr


@pytest.mark.parametrize("option", ["--seeds", "--labs", "--papers", "--attempts"])
def test_a_count_below_one_is_refused_before_any_campaign(tmp_path: Path, option: str) -> None:
    (tmp_path / "gym").mkdir()
    done = _bench(tmp_path, option, "0")
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(f"argument {option}: '0' is not a whole number of 1 or more")
    ), done.stderr
    assert "Traceback" not in done.stderr
