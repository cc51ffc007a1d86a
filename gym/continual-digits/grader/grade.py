"""Trusted grader of continual-digits: `python grader/grade.py <workspace>`, from the bundle.

Reads `hidden/test_labels.npz` and the workspace's `outputs/predictions_after_task_{k}.npy`
(k = 1..5; loaded as plain arrays, never as pickles, and no workspace code is run), prints
one JSON object `{"scores": {...}, "notes": "..."}` and exits 0. Missing or malformed
outputs exit 2 with the reason on stderr.

Scores, with a[i, j] the accuracy after task i on the test examples of task j's classes
(class-incremental: predictions are over all ten classes, no task id):
- `final_accuracy`: accuracy on the whole test set after the last task.
- `average_forgetting`: mean over tasks j = 1..4 of max over stages i = 1..4 of a[i, j]
  minus a[5, j] (Chaudhry et al., 2018).
- `average_incremental_accuracy`: mean over stages k of the accuracy on the test examples
  of the classes seen up to task k (Rebuffi et al., 2017).
"""

import json
import sys
from pathlib import Path

import numpy as np

BUNDLE = Path(__file__).resolve().parent.parent
N_TASKS = 5


class BadOutputs(Exception):
    """The workspace's outputs cannot be scored; the message says why."""


def load_predictions(outputs: Path, n_test: int) -> np.ndarray:
    """Stage-by-test predictions, checked for presence, shape and label range."""
    stages = []
    for k in range(1, N_TASKS + 1):
        path = outputs / f"predictions_after_task_{k}.npy"
        if not path.is_file():
            raise BadOutputs(f"missing {path}: the solution must write it after task {k}")
        try:
            predictions = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise BadOutputs(f"{path} is not a plain numpy array (no pickles): {exc}") from None
        if predictions.shape != (n_test,):
            raise BadOutputs(f"{path} has shape {predictions.shape}, expected ({n_test},)")
        if not np.issubdtype(predictions.dtype, np.integer):
            raise BadOutputs(f"{path} has dtype {predictions.dtype}, expected integer labels")
        if predictions.min() < 0 or predictions.max() > 9:
            raise BadOutputs(f"{path} holds labels outside 0..9")
        stages.append(predictions)
    return np.stack(stages)


def score(predictions: np.ndarray, labels: np.ndarray, task_classes: np.ndarray) -> dict:
    """The three subtask scores from stage-by-test predictions."""
    correct = predictions == labels[None, :]
    in_task = [np.isin(labels, classes) for classes in task_classes]
    accuracy = np.array([[row[mask].mean() for mask in in_task] for row in correct])
    forgetting = [accuracy[:-1, j].max() - accuracy[-1, j] for j in range(N_TASKS - 1)]
    incremental = [
        correct[k][np.isin(labels, task_classes[: k + 1].ravel())].mean() for k in range(N_TASKS)
    ]
    return {
        "final_accuracy": float(correct[-1].mean()),
        "average_forgetting": float(np.mean(forgetting)),
        "average_incremental_accuracy": float(np.mean(incremental)),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python grader/grade.py <workspace>", file=sys.stderr)
        return 2
    workspace = Path(argv[0])
    labels = np.load(BUNDLE / "hidden" / "test_labels.npz")["y_test"].astype(np.int64)
    task_classes = np.load(BUNDLE / "workspace" / "data" / "digits.npz")["task_classes"]
    try:
        predictions = load_predictions(workspace / "outputs", len(labels))
    except BadOutputs as exc:
        print(f"grader: {exc}", file=sys.stderr)
        return 2
    scores = score(predictions, labels, task_classes)
    stage_accuracy = ", ".join(f"{(stage == labels).mean():.3f}" for stage in predictions)
    notes = f"accuracy on the whole test set after tasks 1..5: {stage_accuracy}"
    print(json.dumps({"scores": scores, "notes": notes}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
