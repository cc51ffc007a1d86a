"""Regenerate `workspace/data/` and `hidden/` from scikit-learn's bundled digits (no download).

Run from the bundle folder: `python prepare.py [--out DIR]`. The output is deterministic
and committed, so labs and graders never need scikit-learn's copy.

The 1,797 images are split once, stratified, into 1,257 training and 540 test images
(30 % test, `random_state=0`, the split of continual-digits). Then 40 % of the training
labels are corrupted with class-dependent noise: a flipped label becomes the digit most
often confused with the true one (`CONFUSED_WITH`, an asymmetric pairing), so that every
class keeps a majority of correct labels, but its errors all point one way. Exactly
`round(0.4 * n_c)` labels of each class c are flipped, chosen with a fixed generator.

- `workspace/data/digits.npz`: `x_train` (uint8, n×64, pixel values 0..16), `y_noisy`
  (uint8, the corrupted training labels), `x_test` (uint8, m×64, no labels).
- `hidden/labels.npz`: `y_test` (uint8, the test labels) and `y_train` (uint8, the true
  training labels): the grader scores against both.
"""

import argparse
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

TEST_FRACTION = 0.3
SPLIT_SEED = 0
NOISE_RATE = 0.4
NOISE_SEED = 35
CONFUSED_WITH = np.array([6, 7, 3, 5, 9, 3, 0, 1, 1, 4], dtype=np.uint8)
"""The label a flipped example of digit d gets: 0→6, 1→7, 2→3, 3→5, 4→9, 5→3, 6→0, 7→1,
8→1, 9→4 (pairs of digits that look alike in 8×8 images)."""


def corrupt(y: np.ndarray) -> np.ndarray:
    """Flip `NOISE_RATE` of each class's labels to its confused digit, deterministically."""
    rng = np.random.default_rng(NOISE_SEED)
    noisy = y.copy()
    for label in range(10):
        members = np.flatnonzero(y == label)
        flipped = rng.choice(members, size=round(NOISE_RATE * len(members)), replace=False)
        noisy[flipped] = CONFUSED_WITH[label]
    return noisy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    digits = load_digits()
    x = digits.data.astype(np.uint8)
    y = digits.target.astype(np.uint8)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=TEST_FRACTION, stratify=y, random_state=SPLIT_SEED
    )
    y_noisy = corrupt(y_train)
    data = args.out / "workspace" / "data"
    hidden = args.out / "hidden"
    data.mkdir(parents=True, exist_ok=True)
    hidden.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(data / "digits.npz", x_train=x_train, y_noisy=y_noisy, x_test=x_test)
    np.savez_compressed(hidden / "labels.npz", y_test=y_test, y_train=y_train)
    print(
        f"train {len(y_train)} ({(y_noisy != y_train).mean():.3f} of labels flipped), "
        f"test {len(y_test)} -> {data}, {hidden}"
    )


if __name__ == "__main__":
    main()
