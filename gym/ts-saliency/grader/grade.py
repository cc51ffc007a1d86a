"""Grade a ts-saliency workspace: `python grader/grade.py <workspace>`, cwd = the bundle.

For each kind, reads `<workspace>/outputs/<kind>_attributions.npy` and scores the ranking
of timesteps by attribution (highest first) against the planted window
(`hidden/<kind>.npz`): NDCG@k with binary relevance (1 inside the window) and k the
window's width, tied attributions sharing the discounts of the ranks they span (as in
`sklearn.metrics.ndcg_score`), so 1 means the top-k
timesteps are the window and a constant or random ranking scores about k/length. The
cut at k is deliberate: over the full ranking a random attribution already scores ~0.54
here, which squeezes every method into the top half of the scale. The mean is over the
test series of class 1, the only ones with a planted window (a class-0 series has no
evidence for class 1 to find). Prints one JSON object
`{"scores": {"shape": ..., "shift": ..., "freq": ..., "mean_ndcg": ...}, "notes": ...}`;
exits non-zero with a message on stderr when an output is missing or malformed. Never
imports or runs workspace code: it only loads arrays (no pickles).
"""

import json
import sys
from pathlib import Path

import numpy as np

KINDS = ("shape", "shift", "freq")
HIDDEN = Path(__file__).resolve().parent.parent / "hidden"


class GradingError(Exception):
    """The workspace's outputs cannot be scored."""


def load_attributions(workspace: Path, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    """The workspace's attributions for `kind`, checked for presence, shape and finiteness."""
    path = workspace / "outputs" / f"{kind}_attributions.npy"
    if not path.is_file():
        raise GradingError(f"missing {path}: write one array of shape {shape} per kind")
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise GradingError(f"{path} is not a readable .npy array: {exc}") from exc
    if array.shape != shape:
        raise GradingError(f"{path} has shape {array.shape}, expected {shape} (test_x's shape)")
    if not np.issubdtype(array.dtype, np.number) or np.iscomplexobj(array):
        raise GradingError(f"{path} has dtype {array.dtype}, expected real numbers")
    if not np.all(np.isfinite(array)):
        raise GradingError(f"{path} holds NaN or infinite values")
    return array.astype(np.float64)


def ndcg_at_window(mask: np.ndarray, attributions: np.ndarray) -> float:
    """NDCG@k of one series' timestep ranking, k = the number of timesteps in the window.

    Ties are averaged (McSherry and Najork, 2008): a group of equal attributions gets its
    mean relevance at each rank it spans, so no tie-breaking order can be gamed.
    """
    k = int(mask.sum())
    order = np.argsort(-attributions, kind="stable")
    ranked = attributions[order]
    edges = np.concatenate([[0], np.flatnonzero(np.diff(ranked)) + 1, [len(ranked)]])
    discount = 1.0 / np.log2(np.arange(len(ranked)) + 2.0)
    discount[k:] = 0.0
    relevance = np.concatenate([[0.0], np.cumsum(mask[order], dtype=np.float64)])
    discounts = np.concatenate([[0.0], np.cumsum(discount)])
    start, stop = edges[:-1], edges[1:]
    mean_relevance = (relevance[stop] - relevance[start]) / (stop - start)
    dcg = np.sum(mean_relevance * (discounts[stop] - discounts[start]))
    return float(dcg / discounts[k])


def grade(workspace: Path) -> dict:
    """Scores and notes for the outputs in `workspace`."""
    scores, positives = {}, {}
    for kind in KINDS:
        truth = np.load(HIDDEN / f"{kind}.npz")
        mask, labels = truth["test_mask"], truth["test_y"]
        attributions = load_attributions(workspace, kind, mask.shape)
        graded = np.flatnonzero(labels == 1)
        scores[kind] = float(np.mean([ndcg_at_window(mask[i], attributions[i]) for i in graded]))
        positives[kind] = len(graded)
    scores["mean_ndcg"] = float(np.mean([scores[kind] for kind in KINDS]))
    counts = ", ".join(f"{kind} {n}" for kind, n in positives.items())
    notes = (
        "NDCG@window-width of timestep rankings vs planted windows, "
        f"mean over class-1 test series ({counts})"
    )
    return {"scores": scores, "notes": notes}


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python grader/grade.py <workspace>")
    try:
        result = grade(Path(sys.argv[1]).resolve())
    except GradingError as exc:
        sys.exit(f"grade: {exc}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
