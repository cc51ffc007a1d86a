"""Regenerate the ts-saliency data: `python prepare.py [--out DIR]` (default: this bundle).

Three datasets, one per kind of planted signal, of univariate series of length 128
(AR(1) noise). A series of class 1 carries the class signal in one window at a random
position and of random width; a series of class 0 does not. Every series, of either
class, also carries a class-independent artefact larger than the signal, away from the
window (two spikes; for `freq` a slow wander, since spikes would swamp any local
roughness statistic and leave nothing to find), so that "where the series is large" is
not "where the class evidence is".

- `shape`: a one-period sine burst of random sign;
- `shift`: a level shift (a plateau) of random sign;
- `freq`: every series oscillates with period 16; in the window the period drops to 5.

Writes `workspace/data/<kind>.npz` (train_x, train_y, test_x: public) and
`hidden/<kind>.npz` (test_y, test_mask: the grader's ground truth, 1 inside the planted
window of a class-1 series, 0 elsewhere). The output is byte-for-byte deterministic:
fixed seeds, and zip entries with a fixed timestamp (`np.savez` stamps the wall clock).
"""

import argparse
import zipfile
from pathlib import Path

import numpy as np

KINDS = ("shape", "shift", "freq")
SEED = 20250611
LENGTH = 128
N_TRAIN = 200
N_TEST = 100
NOISE_PHI = 0.6
"""AR(1) coefficient of the background noise."""
NOISE_STD = 0.5
"""Its marginal standard deviation."""
WINDOW_WIDTHS = (12, 24)
"""Inclusive range of the planted window's width."""
SIGNAL_AMPLITUDE = {"shape": 1.5, "shift": 1.0, "freq": 1.0}
BACKGROUND_PERIOD = 16
SIGNAL_PERIOD = 5
ARTEFACT_KIND = {"shape": "spikes", "shift": "spikes", "freq": "wander"}
ARTEFACT_WIDTH = 24
"""Width of the stretch that holds the artefact; it never touches the planted window."""
ARTEFACT_SPIKES = 2
ARTEFACT_AMPLITUDE = (2.5, 4.0)


def _noise(rng: np.random.Generator, n: int) -> np.ndarray:
    innovations = rng.normal(size=(n, LENGTH))
    x = np.empty((n, LENGTH))
    x[:, 0] = NOISE_STD * innovations[:, 0]
    scale = NOISE_STD * np.sqrt(1 - NOISE_PHI**2)
    for t in range(1, LENGTH):
        x[:, t] = NOISE_PHI * x[:, t - 1] + scale * innovations[:, t]
    return x


def _disjoint_start(rng: np.random.Generator, width: int, taken: tuple[int, int]) -> int:
    """A start for a window of `width` that does not touch the window `taken` (start, end)."""
    starts = [s for s in range(LENGTH - width + 1) if s + width <= taken[0] or s >= taken[1]]
    return int(rng.choice(starts))


def _signal(kind: str, rng: np.random.Generator, width: int, start: int) -> np.ndarray:
    """The class signal added to the series over its planted window."""
    amplitude = SIGNAL_AMPLITUDE[kind]
    sign = rng.choice([-1.0, 1.0])
    if kind == "shape":
        u = (np.arange(width) + 0.5) / width
        return sign * amplitude * np.sin(2 * np.pi * u)
    if kind == "shift":
        return np.full(width, sign * amplitude)
    # freq: swap the background oscillation for a faster one over the window.
    t = np.arange(start, start + width)
    return amplitude * np.sin(2 * np.pi * t / SIGNAL_PERIOD + rng.uniform(0, 2 * np.pi))


def _artefact(kind: str, rng: np.random.Generator) -> np.ndarray:
    """The class-independent artefact over its window: spikes, or a slow wander for `freq`."""
    out = np.zeros(ARTEFACT_WIDTH)
    if ARTEFACT_KIND[kind] == "wander":
        u = (np.arange(ARTEFACT_WIDTH) + 0.5) / ARTEFACT_WIDTH
        return rng.choice([-1.0, 1.0]) * rng.uniform(*ARTEFACT_AMPLITUDE) * np.sin(np.pi * u)
    spikes = rng.choice(ARTEFACT_WIDTH, size=ARTEFACT_SPIKES, replace=False)
    sizes = rng.uniform(*ARTEFACT_AMPLITUDE, size=ARTEFACT_SPIKES)
    out[spikes] = rng.choice([-1.0, 1.0], size=ARTEFACT_SPIKES) * sizes
    return out


def generate(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """`n` series of `kind`, balanced classes in random order: (x, y, mask)."""
    x = _noise(rng, n)
    y = rng.permutation(np.arange(n) % 2).astype(np.int8)
    mask = np.zeros((n, LENGTH), dtype=np.uint8)
    t = np.arange(LENGTH)
    for i in range(n):
        if kind == "freq":
            phase = rng.uniform(0, 2 * np.pi)
            background = np.sin(2 * np.pi * t / BACKGROUND_PERIOD + phase)
            x[i] += SIGNAL_AMPLITUDE[kind] * background
        width = int(rng.integers(WINDOW_WIDTHS[0], WINDOW_WIDTHS[1] + 1))
        start = int(rng.integers(0, LENGTH - width + 1))
        if y[i] == 1:
            window = slice(start, start + width)
            if kind == "freq":
                x[i, window] -= SIGNAL_AMPLITUDE[kind] * background[window]
            x[i, window] += _signal(kind, rng, width, start)
            mask[i, window] = 1
        artefact = _disjoint_start(rng, ARTEFACT_WIDTH, (start, start + width))
        x[i, artefact : artefact + ARTEFACT_WIDTH] += _artefact(kind, rng)
    return x.astype(np.float32), y, mask


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Like `np.savez`, but the same arrays always give the same bytes."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            entry = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with archive.open(entry, "w") as handle:
                np.lib.format.write_array(handle, np.ascontiguousarray(array))


def prepare(out: Path) -> None:
    """Write `workspace/data/` and `hidden/` under `out`."""
    data, hidden = out / "workspace" / "data", out / "hidden"
    data.mkdir(parents=True, exist_ok=True)
    hidden.mkdir(parents=True, exist_ok=True)
    for index, kind in enumerate(KINDS):
        rng = np.random.default_rng([SEED, index])
        train_x, train_y, _ = generate(kind, N_TRAIN, rng)
        test_x, test_y, test_mask = generate(kind, N_TEST, rng)
        save_npz(data / f"{kind}.npz", {"train_x": train_x, "train_y": train_y, "test_x": test_x})
        save_npz(hidden / f"{kind}.npz", {"test_y": test_y, "test_mask": test_mask})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    prepare(parser.parse_args().out)


if __name__ == "__main__":
    main()
