"""The ts-saliency bundle: its card, its data generator, its grader, its recorded numbers.

The bundle's code runs as subprocesses, as labrxiv runs it: the starter solution in a
temporary copy of the workspace, the grader from the bundle folder.
"""

import json
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from workers.gym.card import TaskCard

BUNDLE = Path(__file__).resolve().parents[2] / "gym" / "ts-saliency"
KINDS = ("shape", "shift", "freq")
TOLERANCE = 1e-3
"""Runs are seeded; the slack covers float noise from another BLAS, not a changed method."""


@pytest.fixture(scope="module")
def card() -> TaskCard:
    with (BUNDLE / "task.toml").open("rb") as handle:
        return TaskCard.model_validate(tomllib.load(handle))


def _workspace(root: Path, config: Path | None = None) -> Path:
    """A fresh copy of the starter workspace under `root`, optionally with another config."""
    workspace = root / "workspace"
    shutil.copytree(BUNDLE / "workspace", workspace)
    if config is not None:
        shutil.copyfile(config, workspace / "config.json")
    return workspace


def _grade(workspace: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "grader/grade.py", str(workspace)],
        cwd=BUNDLE,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def scores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, float]]:
    """Grader scores of the starter solution with the baseline and the reference config.

    The two runs go in parallel: each is single-threaded and the machine has two cores.
    """
    configs = {"baseline": None, "sota": BUNDLE / "baselines" / "reference.json"}
    workspaces = {
        name: _workspace(tmp_path_factory.mktemp(name), config) for name, config in configs.items()
    }
    runs = {
        name: subprocess.Popen(
            [sys.executable, "solution.py"],
            cwd=workspace,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, workspace in workspaces.items()
    }
    result = {}
    for name, run in runs.items():
        output, _ = run.communicate(timeout=120)
        assert run.returncode == 0, f"{name} solution failed:\n{output}"
        graded = _grade(workspaces[name])
        assert graded.returncode == 0, graded.stderr
        result[name] = json.loads(graded.stdout)["scores"]
    return result


def test_card_validates_and_fits_the_bundle(card: TaskCard) -> None:
    assert card.id == BUNDLE.name
    assert card.primary == "mean_ndcg"
    assert {s.name for s in card.subtasks} == {"mean_ndcg", *KINDS}
    assert card.policies == ["search", "llm", "agent"]
    for path in (BUNDLE / "workspace" / "config.json", BUNDLE / "baselines" / "reference.json"):
        config = json.loads(path.read_text())
        assert config.keys() == card.search_space.keys(), path
        for key, value in config.items():
            assert value in card.search_space[key], f"{path}: {key}={value!r} is off the space"


def test_prepare_is_deterministic_and_matches_the_committed_data(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "prepare.py", "--out", str(tmp_path)], cwd=BUNDLE, check=True, timeout=60
    )
    committed = sorted(
        p.relative_to(BUNDLE)
        for folder in ("workspace/data", "hidden")
        for p in (BUNDLE / folder).rglob("*")
        if p.is_file()
    )
    regenerated = sorted(
        p.relative_to(tmp_path)
        for folder in ("workspace/data", "hidden")
        for p in (tmp_path / folder).rglob("*")
        if p.is_file()
    )
    assert committed == regenerated
    for relative in committed:
        assert (tmp_path / relative).read_bytes() == (BUNDLE / relative).read_bytes(), relative
    assert sum((BUNDLE / p).stat().st_size for p in committed) < 1_000_000


def test_hidden_data_is_not_in_the_workspace() -> None:
    hidden = [
        array
        for path in sorted((BUNDLE / "hidden").glob("*.npz"))
        for array in np.load(path).values()
    ]
    for path in (BUNDLE / "workspace").rglob("*"):
        assert path.name != "hidden"
        if path.suffix == ".npz":
            public = np.load(path)
            assert set(public.files) == {"train_x", "train_y", "test_x"}, path
            for array in public.values():
                assert not any(
                    array.shape == h.shape and np.array_equal(array, h) for h in hidden
                ), path


def test_starter_solution_reproduces_the_card_baseline(
    card: TaskCard, scores: dict[str, dict[str, float]]
) -> None:
    assert scores["baseline"].keys() == {s.name for s in card.subtasks}
    for subtask in card.subtasks:
        assert scores["baseline"][subtask.name] == pytest.approx(subtask.baseline, abs=TOLERANCE)


def test_reference_config_reproduces_sota_and_beats_the_baseline(
    card: TaskCard, scores: dict[str, dict[str, float]]
) -> None:
    for subtask in card.subtasks:
        assert scores["sota"][subtask.name] == pytest.approx(subtask.sota, abs=TOLERANCE)
        assert scores["sota"][subtask.name] > scores["baseline"][subtask.name] + 0.1


def _write_outputs(workspace: Path, make: Callable[[str, np.ndarray], np.ndarray]) -> None:
    """`make(kind, test_x)` gives each kind's attributions."""
    (workspace / "outputs").mkdir()
    for kind in KINDS:
        test_x = np.load(workspace / "data" / f"{kind}.npz")["test_x"]
        np.save(workspace / "outputs" / f"{kind}_attributions.npy", make(kind, test_x))


def test_grader_scores_the_planted_windows_1_and_a_constant_at_chance(tmp_path: Path) -> None:
    masks = {kind: np.load(BUNDLE / "hidden" / f"{kind}.npz")["test_mask"] for kind in KINDS}
    perfect = _workspace(tmp_path / "perfect")
    _write_outputs(perfect, lambda kind, x: masks[kind].astype(np.float32))
    graded = _grade(perfect)
    assert graded.returncode == 0, graded.stderr
    assert json.loads(graded.stdout)["scores"] == pytest.approx(
        {"mean_ndcg": 1.0, **dict.fromkeys(KINDS, 1.0)}
    )

    constant = _workspace(tmp_path / "constant")
    _write_outputs(constant, lambda kind, x: np.zeros_like(x))
    graded = _grade(constant)
    assert graded.returncode == 0, graded.stderr
    for kind in KINDS:
        positives = masks[kind][masks[kind].any(axis=1)]
        # Ties are averaged, so an all-tied ranking scores the window's share of the series.
        chance = (positives.sum(axis=1) / positives.shape[1]).mean()
        assert json.loads(graded.stdout)["scores"][kind] == pytest.approx(chance)


@pytest.mark.parametrize(
    ("kind", "make", "message"),
    [
        ("missing", None, "missing"),
        ("shape", lambda x: x[:, :-1], "shape"),
        ("shift", lambda x: x[:10], "shape"),
        ("freq", lambda x: np.full_like(x, np.nan), "NaN"),
        ("shape", lambda x: x.astype(object), "not a readable"),
    ],
)
def test_grader_fails_clearly_on_bad_outputs(
    tmp_path: Path, kind: str, make: Callable[[np.ndarray], np.ndarray] | None, message: str
) -> None:
    workspace = _workspace(tmp_path)
    if make is not None:
        _write_outputs(workspace, lambda k, x: make(x) if k == kind else x)
    graded = _grade(workspace)
    assert graded.returncode != 0
    assert graded.stdout == ""
    assert message in graded.stderr
    assert "attributions.npy" in graded.stderr
