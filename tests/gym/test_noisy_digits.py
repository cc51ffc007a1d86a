"""The noisy-digits bundle: its card, its data, its grader, its solution, its recorded numbers.

The bundle's code runs as subprocesses, as labrxiv runs it: the starter solution in a
temporary copy of the workspace, the grader and the reproduce script from the bundle folder.
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

BUNDLE = Path(__file__).resolve().parents[2] / "gym" / "noisy-digits"
TOLERANCE = 1e-3
"""Runs are seeded; the slack covers float noise from another BLAS, not a changed method."""


@pytest.fixture(scope="module")
def card() -> TaskCard:
    with (BUNDLE / "task.toml").open("rb") as handle:
        return TaskCard.model_validate(tomllib.load(handle))


def _workspace(root: Path, config: dict | None = None) -> Path:
    """A fresh copy of the starter workspace under `root`, with `config` over the starter's."""
    workspace = shutil.copytree(BUNDLE / "workspace", root / "workspace")
    if config is not None:
        starter = json.loads((workspace / "config.json").read_text())
        (workspace / "config.json").write_text(json.dumps(starter | config))
    return workspace


def _solve(workspace: Path) -> dict[str, np.ndarray]:
    done = subprocess.run(
        [sys.executable, "solution.py"], cwd=workspace, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return {
        name: np.load(workspace / "outputs" / f"{name}_predictions.npy")
        for name in ("test", "train")
    }


def _grade(workspace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "grader/grade.py", str(workspace)],
        cwd=BUNDLE,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _labels() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The true test labels, the true training labels and the public noisy ones."""
    hidden = np.load(BUNDLE / "hidden" / "labels.npz")
    noisy = np.load(BUNDLE / "workspace" / "data" / "digits.npz")["y_noisy"]
    return hidden["y_test"], hidden["y_train"], noisy


def test_card_fits_the_bundle(card: TaskCard) -> None:
    assert card.id == BUNDLE.name
    assert card.primary == "test_accuracy"
    assert [s.name for s in card.subtasks] == ["test_accuracy", "label_recovery"]
    for path in (BUNDLE / "workspace" / "config.json", BUNDLE / "baselines" / "reference.json"):
        config = json.loads(path.read_text())
        assert config.keys() == card.search_space.keys(), path
        for key, value in config.items():
            assert value in card.search_space[key], f"{path}: {key}={value!r} is off the space"


def test_prepare_is_deterministic_and_matches_the_committed_data(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "prepare.py", "--out", str(tmp_path)], cwd=BUNDLE, check=True, timeout=60
    )
    committed = ["workspace/data/digits.npz", "hidden/labels.npz"]
    for relative in committed:
        assert (tmp_path / relative).read_bytes() == (BUNDLE / relative).read_bytes(), relative
    assert sum((BUNDLE / p).stat().st_size for p in committed) < 1_000_000


def test_the_noise_is_40_percent_class_dependent_and_keeps_each_majority() -> None:
    _, y_train, noisy = _labels()
    flipped = noisy != y_train
    assert flipped.mean() == pytest.approx(0.4, abs=0.01)
    for digit in range(10):
        wrong = set(noisy[flipped & (y_train == digit)].tolist())
        assert len(wrong) == 1, f"digit {digit}'s wrong labels are not all one digit: {wrong}"
        assert (noisy[y_train == digit] == digit).mean() > 0.5


def test_hidden_labels_are_not_in_the_workspace() -> None:
    hidden = list(np.load(BUNDLE / "hidden" / "labels.npz").values())
    for path in (BUNDLE / "workspace").rglob("*"):
        assert path.name != "hidden"
        if path.suffix == ".npz":
            public = np.load(path)
            assert set(public.files) == {"x_train", "y_noisy", "x_test"}, path
            for array in public.values():
                assert not any(
                    array.shape == h.shape and np.array_equal(array, h) for h in hidden
                ), path


def test_reproduce_prints_the_cards_numbers_and_the_reference_beats_the_baseline(
    card: TaskCard,
) -> None:
    done = subprocess.run(
        [sys.executable, "baselines/reproduce.py"],
        cwd=BUNDLE,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    numbers = json.loads(done.stdout)
    for subtask in card.subtasks:
        assert numbers["baseline"][subtask.name] == pytest.approx(subtask.baseline, abs=TOLERANCE)
        assert numbers["sota"][subtask.name] == pytest.approx(subtask.sota, abs=TOLERANCE)
        assert numbers["reference"][subtask.name] > subtask.baseline + 0.1
        assert numbers["reference"][subtask.name] < subtask.sota


def test_parameters_of_an_ingredient_that_is_off_are_ignored(tmp_path: Path) -> None:
    off = {"loss": "ce", "selection": "none", "epochs": 10}
    plain = _solve(_workspace(tmp_path / "plain", off))
    changed = _solve(
        _workspace(
            tmp_path / "changed",
            off | {"gce_q": 0.3, "sce_alpha": 1.0, "bootstrap_beta": 0.6, "keep_rate": 0.5},
        )
    )
    for name, predictions in plain.items():
        np.testing.assert_array_equal(predictions, changed[name])
    selecting = _solve(_workspace(tmp_path / "selecting", off | {"selection": "small_loss"}))
    assert not np.array_equal(selecting["train"], plain["train"])


def _write(workspace: Path, test: np.ndarray, train: np.ndarray) -> None:
    """The outputs, a row per training seed: one row given is written for all three."""
    (workspace / "outputs").mkdir()
    np.save(workspace / "outputs" / "test_predictions.npy", _rows(test))
    np.save(workspace / "outputs" / "train_predictions.npy", _rows(train))


def _rows(predictions: np.ndarray) -> np.ndarray:
    return np.stack([predictions] * 3) if predictions.ndim == 1 else predictions


def test_every_score_is_the_mean_over_the_seeds_rows(tmp_path: Path) -> None:
    y_test, y_train, noisy = _labels()
    workspace = _workspace(tmp_path)
    zeros = np.zeros_like(y_test, dtype=np.int64)
    test = np.stack([y_test.astype(np.int64), y_test.astype(np.int64), zeros])
    train = np.stack([y_train.astype(np.int64), noisy.astype(np.int64), noisy.astype(np.int64)])
    _write(workspace, test, train)
    graded = _grade(workspace)
    assert graded.returncode == 0, graded.stderr
    scores = json.loads(graded.stdout)["scores"]
    assert scores["test_accuracy"] == pytest.approx((2 + (y_test == 0).mean()) / 3)
    assert scores["label_recovery"] == pytest.approx(1 / 3)
    one_row = _workspace(tmp_path / "one")
    _write(one_row, y_test[None, :].astype(np.int64), y_train[None, :].astype(np.int64))
    assert "expected (3, 540)" in _grade(one_row).stderr, "a lucky seed alone is not scored"


def test_grader_scores_the_true_labels_1_and_the_noisy_labels_0_recovery(tmp_path: Path) -> None:
    y_test, y_train, noisy = _labels()
    perfect = _workspace(tmp_path / "perfect")
    _write(perfect, y_test.astype(np.int64), y_train.astype(np.int64))
    graded = _grade(perfect)
    assert graded.returncode == 0, graded.stderr
    assert json.loads(graded.stdout)["scores"] == {"test_accuracy": 1.0, "label_recovery": 1.0}

    memorized = _workspace(tmp_path / "memorized")
    constant = np.zeros_like(y_test, dtype=np.int64)
    _write(memorized, constant, noisy.astype(np.int64))
    graded = _grade(memorized)
    assert graded.returncode == 0, graded.stderr
    scores = json.loads(graded.stdout)["scores"]
    assert scores["label_recovery"] == 0.0
    assert scores["test_accuracy"] == pytest.approx((y_test == 0).mean())


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (None, "missing"),
        (lambda y: y[:-1], "shape"),
        (lambda y: y.astype(np.float64), "dtype"),
        (lambda y: y + 10, "outside 0..9"),
        (lambda y: y.astype(object), "not a plain numpy array"),
    ],
)
def test_grader_rejects_bad_outputs_in_one_line(
    tmp_path: Path, make: Callable[[np.ndarray], np.ndarray] | None, message: str
) -> None:
    y_test, y_train, _ = _labels()
    workspace = _workspace(tmp_path)
    if make is not None:
        _write(workspace, make(y_test.astype(np.int64)), y_train.astype(np.int64))
    graded = _grade(workspace)
    assert graded.returncode == 2
    assert graded.stdout == ""
    assert message in graded.stderr and "test_predictions.npy" in graded.stderr
    assert graded.stderr.count("\n") == 1 and "Traceback" not in graded.stderr
