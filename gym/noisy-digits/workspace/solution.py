"""Learning with noisy labels on 8x8 digits: train on corrupted labels, predict the true ones.

Run with the workspace as the current directory: `python solution.py`. It reads
`config.json` and `data/digits.npz` (training images with noisy labels, test images),
trains a small numpy network once for each training seed in `SEEDS`, and writes
`outputs/test_predictions.npy` (per seed, the predicted digit of every test image) and
`outputs/train_predictions.npy` (per seed, the predicted digit of every training image:
where it differs from the noisy label, the network says the label is wrong). The grader
scores the mean over the seeds: a configuration is judged by what it does, not by a
lucky initialization.

The network is one ReLU layer of `hidden_units` then softmax, trained by minibatch SGD
with momentum for `epochs` epochs at `learning_rate` with L2 `weight_decay`. The
ingredients `config.json` chooses, each from the noisy-label literature:
- `loss`: `ce` (cross-entropy); `gce` (generalized cross-entropy, Zhang & Sabuncu 2018,
  with `gce_q`); `sce` (symmetric cross-entropy, Wang et al. 2019: `sce_alpha` × CE plus
  reverse CE); `bootstrap` (hard bootstrapping, Reed et al. 2015: the target is
  `bootstrap_beta` × the label plus the rest × the network's own prediction).
- `label_smoothing`: the target puts this mass uniformly over the ten classes.
- `mixup_alpha`: mixup (Zhang et al. 2018) with a Beta(alpha, alpha) mixing weight; 0 is off.
- `selection`: `none`, or `small_loss` (Han et al. 2018's criterion): after
  `warmup_epochs` epochs on everything, each epoch trains only on the `keep_rate` of the
  examples with the smallest loss under the current network.
- `augment`: `none`, or `shift` (each batch's images moved by up to one pixel).
A parameter of an ingredient that is off (`gce_q` when `loss` is not `gce`) is ignored.
"""

import json
from pathlib import Path
from typing import Any

import numpy as np

N_CLASSES = 10
BATCH_SIZE = 64
MOMENTUM = 0.9
RCE_LOG_ZERO = -4.0
"""log 0 in reverse cross-entropy, as in Wang et al. 2019."""
LOSSES = ("ce", "gce", "sce", "bootstrap")
SEEDS = (0, 1, 2)
"""The training seeds (initialization and order of the examples) every run is scored over."""


def softmax(scores: np.ndarray) -> np.ndarray:
    scores = scores - scores.max(axis=1, keepdims=True)
    exp = np.exp(scores)
    return exp / exp.sum(axis=1, keepdims=True)


class Network:
    """One ReLU hidden layer then softmax, trained by SGD with momentum."""

    def __init__(self, n_inputs: int, hidden_units: int, rng: np.random.Generator) -> None:
        self.params = [
            rng.normal(0.0, np.sqrt(2.0 / n_inputs), size=(n_inputs, hidden_units)),
            np.zeros(hidden_units),
            rng.normal(0.0, np.sqrt(1.0 / hidden_units), size=(hidden_units, N_CLASSES)),
            np.zeros(N_CLASSES),
        ]
        self.velocity = [np.zeros_like(p) for p in self.params]

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Hidden activations and class probabilities."""
        w1, b1, w2, b2 = self.params
        hidden = np.maximum(x @ w1 + b1, 0.0)
        return hidden, softmax(hidden @ w2 + b2)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.forward(x)[1].argmax(axis=1)

    def step(self, x: np.ndarray, grad_scores: np.ndarray, rate: float, decay: float) -> None:
        """One SGD step given the gradient of the batch's mean loss w.r.t. the scores."""
        w1, _, w2, _ = self.params
        hidden = np.maximum(x @ w1 + self.params[1], 0.0)
        grad_hidden = (grad_scores @ w2.T) * (hidden > 0)
        grads = [
            x.T @ grad_hidden + decay * w1,
            grad_hidden.sum(axis=0),
            hidden.T @ grad_scores + decay * w2,
            grad_scores.sum(axis=0),
        ]
        for param, velocity, grad in zip(self.params, self.velocity, grads, strict=True):
            velocity *= MOMENTUM
            velocity -= rate * grad
            param += velocity


def loss_gradient(config: dict[str, Any], probs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Gradient of the per-example loss w.r.t. the scores, for soft `targets` (rows sum to 1)."""
    loss = config["loss"]
    if loss == "gce":
        q = config["gce_q"]
        powered = probs**q
        weight = (targets * powered).sum(axis=1, keepdims=True)
        return weight * probs - targets * powered
    if loss == "bootstrap":
        beta = config["bootstrap_beta"]
        own = np.eye(N_CLASSES)[probs.argmax(axis=1)]
        return probs - (beta * targets + (1.0 - beta) * own)
    grad = probs - targets
    if loss == "sce":
        log_targets = np.log(np.clip(targets, np.exp(RCE_LOG_ZERO), 1.0))
        expected = (probs * log_targets).sum(axis=1, keepdims=True)
        grad = config["sce_alpha"] * grad - probs * (log_targets - expected)
    return grad


def per_example_loss(config: dict[str, Any], probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The cross-entropy of each example's noisy label: the small-loss criterion."""
    return -np.log(np.maximum(probs[np.arange(len(labels)), labels], 1e-12))


def shifted(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each 8x8 image moved by up to one pixel in each direction (zeros fill the border)."""
    images = x.reshape(-1, 8, 8)
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    rows = rng.integers(0, 3, size=len(x))
    cols = rng.integers(0, 3, size=len(x))
    index = np.arange(8)
    out = padded[
        np.arange(len(x))[:, None, None],
        rows[:, None, None] + index[None, :, None],
        cols[:, None, None] + index[None, None, :],
    ]
    return out.reshape(len(x), 64)


def train(
    config: dict[str, Any], x: np.ndarray, labels: np.ndarray, rng: np.random.Generator
) -> Network:
    network = Network(x.shape[1], config["hidden_units"], rng)
    smoothing = config["label_smoothing"]
    targets = (1.0 - smoothing) * np.eye(N_CLASSES)[labels] + smoothing / N_CLASSES
    small_loss = config["selection"] == "small_loss"
    for epoch in range(config["epochs"]):
        chosen = np.arange(len(labels))
        if small_loss and epoch >= config["warmup_epochs"]:
            losses = per_example_loss(config, network.forward(x)[1], labels)
            chosen = np.argsort(losses, kind="stable")[: round(config["keep_rate"] * len(labels))]
        order = rng.permutation(chosen)
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start : start + BATCH_SIZE]
            inputs, soft = x[batch], targets[batch]
            if config["augment"] == "shift":
                inputs = shifted(inputs, rng)
            if config["mixup_alpha"] > 0:
                mix = rng.beta(config["mixup_alpha"], config["mixup_alpha"])
                partner = rng.permutation(len(batch))
                inputs = mix * inputs + (1.0 - mix) * inputs[partner]
                soft = mix * soft + (1.0 - mix) * soft[partner]
            probs = network.forward(inputs)[1]
            grad = loss_gradient(config, probs, soft) / len(batch)
            network.step(inputs, grad, config["learning_rate"], config["weight_decay"])
    return network


def load_config(path: Path) -> dict[str, Any]:
    config = json.loads(path.read_text())
    if config["loss"] not in LOSSES:
        raise SystemExit(f"config.json: loss must be one of {LOSSES}, not {config['loss']!r}")
    if config["selection"] not in ("none", "small_loss"):
        raise SystemExit("config.json: selection must be 'none' or 'small_loss'")
    if config["augment"] not in ("none", "shift"):
        raise SystemExit("config.json: augment must be 'none' or 'shift'")
    return config


def main() -> None:
    config = load_config(Path("config.json"))
    data = np.load("data/digits.npz")
    x_train = data["x_train"].astype(np.float64) / 16.0
    y_noisy = data["y_noisy"].astype(np.int64)
    x_test = data["x_test"].astype(np.float64) / 16.0
    test, train_seen = [], []
    for seed in SEEDS:
        network = train(config, x_train, y_noisy, np.random.default_rng(seed))
        test.append(network.predict(x_test))
        train_seen.append(network.predict(x_train))
    outputs = Path("outputs")
    outputs.mkdir(exist_ok=True)
    np.save(outputs / "test_predictions.npy", np.array(test, dtype=np.int64))
    np.save(outputs / "train_predictions.npy", np.array(train_seen, dtype=np.int64))


if __name__ == "__main__":
    main()
