"""Regenerate `workspace/data/` and `hidden/` from scikit-learn's bundled digits (no download).

Run from the bundle folder: `python prepare.py`. The output is deterministic (a fixed
stratified split) and committed, so labs and graders never need scikit-learn's copy.

- `workspace/data/digits.npz`: `x_train` (uint8, n×64, pixel values 0..16), `y_train`
  (uint8), `x_test` (uint8, m×64, no labels), `task_classes` (uint8, 5×2: the classes of
  each task, in training order).
- `hidden/test_labels.npz`: `y_test` (uint8), the labels the grader scores against.
"""

from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

TEST_FRACTION = 0.3
SPLIT_SEED = 0
TASK_CLASSES = np.array([[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]], dtype=np.uint8)


def main() -> None:
    bundle = Path(__file__).resolve().parent
    digits = load_digits()
    x = digits.data.astype(np.uint8)
    y = digits.target.astype(np.uint8)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=TEST_FRACTION, stratify=y, random_state=SPLIT_SEED
    )
    data = bundle / "workspace" / "data"
    hidden = bundle / "hidden"
    data.mkdir(parents=True, exist_ok=True)
    hidden.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        data / "digits.npz",
        x_train=x_train,
        y_train=y_train,
        x_test=x_test,
        task_classes=TASK_CLASSES,
    )
    np.savez_compressed(hidden / "test_labels.npz", y_test=y_test)
    print(f"train {len(y_train)}, test {len(y_test)} -> {data}, {hidden}")


if __name__ == "__main__":
    main()
