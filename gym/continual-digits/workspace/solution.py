"""Class-incremental learning on 8x8 digits: five tasks of two classes, learned in order.

Run with the workspace as the current directory: `python solution.py`. It reads
`config.json` and `data/digits.npz`, learns the tasks one after another, and after task k
(1..5) writes `outputs/predictions_after_task_{k}.npy`: the predicted class (0..9) of every
test input. No task id is given at test time: every prediction is over all ten classes.

The learner is a small network in numpy (softmax regression when `hidden_units` is 0, one
ReLU hidden layer otherwise) trained by minibatch SGD on cross-entropy over all ten classes.
`method` says what it may keep between tasks:
- `finetune`: nothing; it trains on the current task only (forgets old classes).
- `replay`: a memory of `replay_per_class` training examples per class seen, chosen by
  `selection` (`random`, or `herding` as in iCaRL), mixed into every later task's training.
- `ncm`: trains like `replay`, then predicts the class whose exemplar mean is nearest in the
  network's feature space (iCaRL's nearest-mean-of-exemplars classifier); with an empty
  memory it predicts like the others.
- `joint`: retrains from scratch on all training data of the tasks seen so far. It stores
  everything, so it is not a continual learner: it is the upper bound the card reports.
"""

import json
from pathlib import Path
from typing import Any

import numpy as np

N_CLASSES = 10
BATCH_SIZE = 32
METHODS = ("finetune", "replay", "ncm", "joint")


class Network:
    """Softmax regression, or one ReLU hidden layer then softmax."""

    def __init__(self, n_inputs: int, hidden_units: int, rng: np.random.Generator) -> None:
        self.layers: list[list[np.ndarray]] = []
        sizes = [n_inputs, hidden_units, N_CLASSES] if hidden_units else [n_inputs, N_CLASSES]
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            weight = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_in, fan_out))
            self.layers.append([weight, np.zeros(fan_out)])

    def features(self, x: np.ndarray) -> np.ndarray:
        """The input of the last layer (the raw input for softmax regression)."""
        for weight, bias in self.layers[:-1]:
            x = np.maximum(x @ weight + bias, 0.0)
        return x

    def logits(self, x: np.ndarray) -> np.ndarray:
        """Scores of the ten classes."""
        weight, bias = self.layers[-1]
        return self.features(x) @ weight + bias

    def step(self, x: np.ndarray, y: np.ndarray, learning_rate: float) -> None:
        """One SGD step on the mean cross-entropy of a batch."""
        activations = [x]
        for weight, bias in self.layers[:-1]:
            activations.append(np.maximum(activations[-1] @ weight + bias, 0.0))
        weight, bias = self.layers[-1]
        scores = activations[-1] @ weight + bias
        scores -= scores.max(axis=1, keepdims=True)
        grad = np.exp(scores)
        grad /= grad.sum(axis=1, keepdims=True)
        grad[np.arange(len(y)), y] -= 1.0
        grad /= len(y)
        for index in range(len(self.layers) - 1, -1, -1):
            weight, bias = self.layers[index]
            grad_weight = activations[index].T @ grad
            grad_bias = grad.sum(axis=0)
            if index:
                grad = (grad @ weight.T) * (activations[index] > 0)
            weight -= learning_rate * grad_weight
            bias -= learning_rate * grad_bias

    def train(
        self,
        x: np.ndarray,
        y: np.ndarray,
        epochs: int,
        learning_rate: float,
        rng: np.random.Generator,
    ) -> None:
        for _ in range(epochs):
            order = rng.permutation(len(y))
            for start in range(0, len(y), BATCH_SIZE):
                batch = order[start : start + BATCH_SIZE]
                self.step(x[batch], y[batch], learning_rate)


def select_exemplars(
    features: np.ndarray, count: int, selection: str, rng: np.random.Generator
) -> np.ndarray:
    """Indices of `count` examples of one class: random, or herding toward the class mean."""
    count = min(count, len(features))
    if selection == "random":
        return rng.choice(len(features), size=count, replace=False)
    mean = features.mean(axis=0)
    chosen: list[int] = []
    total = np.zeros_like(mean)
    for k in range(1, count + 1):
        distances = np.linalg.norm(mean - (total + features) / k, axis=1)
        distances[chosen] = np.inf
        best = int(np.argmin(distances))
        chosen.append(best)
        total += features[best]
    return np.array(chosen, dtype=int)


def load_config(path: Path) -> dict[str, Any]:
    config = json.loads(path.read_text())
    if config["method"] not in METHODS:
        raise SystemExit(f"config.json: method must be one of {METHODS}, not {config['method']!r}")
    if config["selection"] not in ("random", "herding"):
        raise SystemExit("config.json: selection must be 'random' or 'herding'")
    return config


def nearest_mean(
    network: Network, x_memory: np.ndarray, y_memory: np.ndarray, x_test: np.ndarray
) -> np.ndarray:
    """Predict the class whose (L2-normalized) exemplar feature mean is nearest."""

    def normalized(x: np.ndarray) -> np.ndarray:
        features = network.features(x)
        return features / np.maximum(np.linalg.norm(features, axis=1, keepdims=True), 1e-12)

    labels = np.unique(y_memory)
    memory_features = normalized(x_memory)
    means = np.stack([memory_features[y_memory == label].mean(axis=0) for label in labels])
    distances = np.linalg.norm(normalized(x_test)[:, None, :] - means[None, :, :], axis=2)
    return labels[distances.argmin(axis=1)]


def main() -> None:
    config = load_config(Path("config.json"))
    data = np.load("data/digits.npz")
    x_train = data["x_train"].astype(np.float64) / 16.0
    y_train = data["y_train"].astype(np.int64)
    x_test = data["x_test"].astype(np.float64) / 16.0
    task_classes = data["task_classes"]
    rng = np.random.default_rng(config["seed"])
    method = config["method"]
    network = Network(x_train.shape[1], config["hidden_units"], rng)
    memory = np.zeros(0, dtype=int)
    outputs = Path("outputs")
    outputs.mkdir(exist_ok=True)

    for k, classes in enumerate(task_classes, start=1):
        current = np.flatnonzero(np.isin(y_train, classes))
        if method == "joint":
            network = Network(x_train.shape[1], config["hidden_units"], rng)
            seen = np.isin(y_train, task_classes[:k].ravel())
            train = np.flatnonzero(seen)
        elif method == "finetune":
            train = current
        else:
            train = np.concatenate([current, memory])
        network.train(
            x_train[train], y_train[train], config["epochs"], config["learning_rate"], rng
        )
        if method in ("replay", "ncm"):
            features = network.features(x_train)
            for label in classes:
                members = np.flatnonzero(y_train == label)
                picked = select_exemplars(
                    features[members], config["replay_per_class"], config["selection"], rng
                )
                memory = np.concatenate([memory, members[picked]])
        if method == "ncm" and len(memory):
            predictions = nearest_mean(network, x_train[memory], y_train[memory], x_test)
        else:
            predictions = network.logits(x_test).argmax(axis=1)
        np.save(outputs / f"predictions_after_task_{k}.npy", predictions.astype(np.int64))


if __name__ == "__main__":
    main()
