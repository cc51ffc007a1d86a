"""Time-series saliency: which timesteps carry a classifier's evidence for class 1?

For each dataset in `data/` (`shape`, `shift`, `freq`) this script trains a classifier
on the labelled train series, then attributes to every timestep of every test series a
score of how much it supports class 1, and writes them to
`outputs/<kind>_attributions.npy` (float32, same shape as `test_x`). Only the ranking of
timesteps within a series matters: the grader compares it with the window where the
class signal was planted (NDCG).

`config.json` chooses the method:
- `method`: `random` (a floor), `magnitude` (|x - median|, no model), `gradient`
  (gradient x input of P(class 1), by central finite differences through the whole
  model) or `occlusion` (replace a sliding window by the series median and record the
  drop in P(class 1); a timestep gets the mean drop over the windows that cover it);
- `model`: `logreg` (standardized logistic regression) or `random_forest`;
- `features`: `raw` (the 128 values) or `pooled` (max- and min-pooled local mean, std
  and roughness at three scales: shift-invariant, so a signal anywhere can be found);
- `window`: width of the occluding window;
- `smoothing`: width of a moving average applied to the attributions (1 = none);
- `seed`: for `random` and the random forest.
"""

import json
import logging
from pathlib import Path

import numpy as np
from scipy.ndimage import uniform_filter1d
from sklearn.base import ClassifierMixin
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

KINDS = ("shape", "shift", "freq")
SCALES = (8, 16, 32)
"""Widths of the local statistics behind the `pooled` features."""
GRADIENT_STEP = 0.1
CHUNK = 16
"""Test series perturbed at once (bounds memory: perturbations x length per series)."""

log = logging.getLogger("solution")


def _moving_mean(x: np.ndarray, width: int) -> np.ndarray:
    """Mean over each full window of `width` along the last axis."""
    total = np.cumsum(x, axis=-1)
    total = np.concatenate([np.zeros_like(total[..., :1]), total], axis=-1)
    return (total[..., width:] - total[..., :-width]) / width


def pooled_features(x: np.ndarray) -> np.ndarray:
    """Max and min over time of local mean, std and roughness (mean |diff|) per scale."""
    columns = []
    roughness = np.abs(np.diff(x, axis=-1))
    for width in SCALES:
        mean = _moving_mean(x, width)
        std = np.sqrt(np.maximum(_moving_mean(x**2, width) - mean**2, 0.0))
        rough = _moving_mean(roughness, width - 1)
        for stat in (mean, std, rough):
            columns += [stat.max(axis=-1), stat.min(axis=-1)]
    return np.stack(columns, axis=-1)


def make_model(config: dict) -> ClassifierMixin:
    """The classifier (features included), so attribution methods see one black box."""
    features = {
        "raw": FunctionTransformer(),
        "pooled": FunctionTransformer(pooled_features),
    }[config["features"]]
    if config["model"] == "logreg":
        return make_pipeline(features, StandardScaler(), LogisticRegression(max_iter=2000))
    if config["model"] == "random_forest":
        forest = RandomForestClassifier(
            n_estimators=100, min_samples_leaf=2, random_state=config["seed"], n_jobs=1
        )
        return make_pipeline(features, forest)
    raise ValueError(f"unknown model {config['model']!r}")


def _positive_probability(model: ClassifierMixin, x: np.ndarray) -> np.ndarray:
    shape = x.shape
    flat = x.reshape(-1, shape[-1])
    return model.predict_proba(flat)[:, 1].reshape(shape[:-1])


def gradient_attributions(model: ClassifierMixin, x: np.ndarray) -> np.ndarray:
    """Gradient x input of P(class 1), each partial derivative by central differences."""
    length = x.shape[1]
    step = GRADIENT_STEP * np.eye(length)
    out = np.empty_like(x, dtype=np.float64)
    for begin in range(0, len(x), CHUNK):
        batch = x[begin : begin + CHUNK, None, :]
        up = _positive_probability(model, batch + step)
        down = _positive_probability(model, batch - step)
        out[begin : begin + CHUNK] = (up - down) / (2 * GRADIENT_STEP) * x[begin : begin + CHUNK]
    return out


def occlusion_attributions(model: ClassifierMixin, x: np.ndarray, window: int) -> np.ndarray:
    """Mean drop of P(class 1) over the occluded windows (series median) covering each step."""
    length = x.shape[1]
    starts = np.arange(length - window + 1)
    covers = np.zeros((len(starts), length))
    for row, start in enumerate(starts):
        covers[row, start : start + window] = 1.0
    out = np.empty_like(x, dtype=np.float64)
    for begin in range(0, len(x), CHUNK):
        batch = x[begin : begin + CHUNK].astype(np.float64)
        fill = np.median(batch, axis=1)[:, None, None]
        occluded = np.where(covers[None] > 0, fill, batch[:, None, :])
        before = _positive_probability(model, batch)
        drop = before[:, None] - _positive_probability(model, occluded)
        out[begin : begin + CHUNK] = (drop @ covers) / covers.sum(axis=0)
    return out


def attribute(
    config: dict, train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray
) -> tuple[np.ndarray, float | None]:
    """Attributions for `test_x` (and a cross-validated accuracy of the model, if one is used)."""
    method = config["method"]
    if method == "random":
        return np.random.default_rng(config["seed"]).random(test_x.shape), None
    if method == "magnitude":
        return np.abs(test_x - np.median(test_x, axis=1, keepdims=True)), None
    model = make_model(config)
    accuracy = cross_val_score(model, train_x, train_y, cv=3).mean()
    model.fit(train_x, train_y)
    if method == "gradient":
        return gradient_attributions(model, test_x), accuracy
    if method == "occlusion":
        return occlusion_attributions(model, test_x, config["window"]), accuracy
    raise ValueError(f"unknown method {method!r}")


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = json.loads(Path("config.json").read_text())
    outputs = Path("outputs")
    outputs.mkdir(exist_ok=True)
    for kind in KINDS:
        data = np.load(Path("data") / f"{kind}.npz")
        attributions, accuracy = attribute(config, data["train_x"], data["train_y"], data["test_x"])
        if config["smoothing"] > 1:
            attributions = uniform_filter1d(
                attributions, size=config["smoothing"], axis=1, mode="nearest"
            )
        np.save(outputs / f"{kind}_attributions.npy", attributions.astype(np.float32))
        detail = "" if accuracy is None else f" (model 3-fold cv accuracy {accuracy:.3f})"
        log.info("%s: wrote %s attributions%s", kind, attributions.shape, detail)


if __name__ == "__main__":
    main()
