"""Trusted grader of noisy-digits: `python grader/grade.py <workspace>`, from the bundle.

Reads `hidden/labels.npz` (the true test and training labels) and the workspace's
`outputs/test_predictions.npy` and `outputs/train_predictions.npy` (loaded as plain
arrays, never as pickles; no workspace code is run), prints one JSON object
`{"scores": {...}, "notes": "..."}` and exits 0. Missing or malformed outputs exit 2
with the reason on stderr, in one line.

Each output holds one row of predictions per training seed (`SEEDS`, three); every
score is the mean over the rows:
- `test_accuracy`: accuracy on the test images against their true labels.
- `label_recovery`: of the training images whose public label is wrong, the fraction
  whose predicted digit is the true one (the network corrected the label).
"""

import json
import sys
from pathlib import Path

import numpy as np

BUNDLE = Path(__file__).resolve().parent.parent
SEEDS = 3
"""Rows of predictions an output holds: one per training seed."""


class BadOutputs(Exception):
    """The workspace's outputs cannot be scored; the message says why."""


def load_predictions(path: Path, count: int) -> np.ndarray:
    """One predicted digit per image and seed, checked for presence, type, shape, range."""
    if not path.is_file():
        raise BadOutputs(f"missing {path}: the solution must write it")
    try:
        predictions = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadOutputs(f"{path} is not a plain numpy array (no pickles): {reason}") from None
    if predictions.shape != (SEEDS, count):
        raise BadOutputs(
            f"{path} has shape {predictions.shape}, expected ({SEEDS}, {count}): one row of "
            "predictions per training seed"
        )
    if not np.issubdtype(predictions.dtype, np.integer):
        raise BadOutputs(f"{path} has dtype {predictions.dtype}, expected integer labels")
    if count and (predictions.min() < 0 or predictions.max() > 9):
        raise BadOutputs(f"{path} holds labels outside 0..9")
    return predictions


def score(
    test: np.ndarray, train: np.ndarray, y_test: np.ndarray, y_train: np.ndarray, noisy: np.ndarray
) -> dict[str, float]:
    """The subtask scores from the predictions and the true and noisy labels."""
    flipped = noisy != y_train
    return {
        "test_accuracy": float((test == y_test[None, :]).mean()),
        "label_recovery": float((train[:, flipped] == y_train[None, flipped]).mean()),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python grader/grade.py <workspace>", file=sys.stderr)
        return 2
    outputs = Path(argv[0]) / "outputs"
    hidden = np.load(BUNDLE / "hidden" / "labels.npz")
    y_test = hidden["y_test"].astype(np.int64)
    y_train = hidden["y_train"].astype(np.int64)
    noisy = np.load(BUNDLE / "workspace" / "data" / "digits.npz")["y_noisy"].astype(np.int64)
    try:
        test = load_predictions(outputs / "test_predictions.npy", len(y_test))
        train = load_predictions(outputs / "train_predictions.npy", len(y_train))
    except BadOutputs as exc:
        print(f"grader: {exc}", file=sys.stderr)
        return 2
    scores = score(test, train, y_test, y_train, noisy)
    clean = noisy == y_train
    per_seed = ", ".join(f"{(row == y_test).mean():.4f}" for row in test)
    notes = (
        f"test accuracy per seed: {per_seed}; training images: "
        f"{(train == y_train[None, :]).mean():.3f} predicted as their true digit, "
        f"{(train[:, clean] == y_train[None, clean]).mean():.3f} of the correctly labelled "
        f"ones, {(train[:, ~clean] == noisy[None, ~clean]).mean():.3f} of the mislabelled ones "
        "predicted as their wrong label (memorized)"
    )
    print(json.dumps({"scores": scores, "notes": notes}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
