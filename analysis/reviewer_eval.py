"""How well a reviewer agrees with human reviewers (CycleReviewer's evaluation), on any
JSONL of papers with human reviews and a reviewer's predictions for them.

Every figure has a percentile bootstrap interval over papers (seeded: the same data give
the same interval). Definitions, with the "proxy" comparison, are in docs/review.md
("Reviewer calibration"). Pure functions of the data: the CLI reads the files.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from events.payloads.review import ACCEPT_RATING

Decision = Literal["accept", "reject"]
M = TypeVar("M", bound=BaseModel)
RESAMPLES = 1000
CONFIDENCE = 0.95


class HumanReview(BaseModel):
    """One human's review of a paper."""

    model_config = ConfigDict(extra="ignore", strict=True)

    rating: int | float = Field(ge=1, le=10)
    soundness: int | float | None = Field(default=None, ge=1, le=4)
    presentation: int | float | None = Field(default=None, ge=1, le=4)
    contribution: int | float | None = Field(default=None, ge=1, le=4)
    confidence: int | float | None = Field(default=None, ge=1, le=5)


class HumanPaper(BaseModel):
    """A line of the data file: a paper, its human reviews and its decision."""

    model_config = ConfigDict(extra="ignore", strict=True)

    id: str = Field(min_length=1)
    text: str = ""
    reviews: list[HumanReview] = Field(min_length=1)
    decision: Decision


class Prediction(BaseModel):
    """A line of the predictions file: the reviewer's rating (and decision) of a paper."""

    model_config = ConfigDict(extra="ignore", strict=True)

    id: str = Field(min_length=1)
    rating: int | float = Field(ge=1, le=10)
    decision: Decision | None = None
    """None: accept when the rating reaches the bar (`--accept-rating`)."""


class BadLines(ValueError):
    """Lines of a file that are not what they should be, each with its number."""

    def __init__(self, path: str, problems: list[tuple[int, str]]) -> None:
        self.problems = problems
        shown = "; ".join(f"line {n}: {why}" for n, why in problems[:20])
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        super().__init__(f"{path}: {len(problems)} malformed line(s): {shown}{more}")


def read_lines(path: str, text: str, model: type[M]) -> list[M]:
    """Every non-blank line of `text` as `model`; raises `BadLines` naming every line
    that is not JSON or not the model (nothing is dropped silently)."""
    out, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(model.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            problems.append((number, f"{where}: {first['msg']}"))
    if problems:
        raise BadLines(path, problems)
    return out


@dataclass(frozen=True)
class Figure:
    """One figure, its bootstrap interval and how many items it is over."""

    value: float | None
    low: float | None
    high: float | None
    n: int


@dataclass(frozen=True)
class Evaluation:
    """A reviewer against human reviewers."""

    papers: int
    mae: Figure
    """Against each paper's mean human rating."""
    mse: Figure
    proxy_mae: Figure
    """Against each human's held-out target (the mean of the paper's other humans)."""
    proxy_mse: Figure
    human_proxy_mae: Figure
    """The humans themselves against the same targets: the bar a reviewer is held to."""
    human_proxy_mse: Figure
    spearman: Figure
    """Between the reviewer's rating and the mean human rating."""
    decision_accuracy: Figure
    decision_macro_f1: Figure
    pairwise_accuracy: Figure
    """Of paper pairs the humans' mean ratings order, the share the reviewer orders alike
    (a tie counts half)."""
    missing: tuple[str, ...]
    """Papers of the data with no prediction (left out of every figure)."""


def evaluate(
    papers: Sequence[HumanPaper],
    predictions: Sequence[Prediction],
    accept_rating: float = ACCEPT_RATING,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Evaluation:
    """The figures of `predictions` against the humans of `papers` (matched by id)."""
    predicted = {p.id: p for p in predictions}
    kept = [p for p in papers if p.id in predicted]
    missing = tuple(p.id for p in papers if p.id not in predicted)
    humans = [[float(r.rating) for r in p.reviews] for p in kept]
    mean = np.array([fmean(h) for h in humans])
    rating = np.array([float(predicted[p.id].rating) for p in kept])
    truth = [p.decision for p in kept]
    said = [_decision(predicted[p.id], accept_rating) for p in kept]
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(kept), len(kept)) for _ in range(resamples)] if kept else []

    def figure(stat: Callable[[np.ndarray], float | None]) -> Figure:
        index = np.arange(len(kept))
        value = stat(index) if len(kept) else None
        boot = [v for d in draws if (v := stat(d)) is not None and np.isfinite(v)]
        low, high = _interval(boot)
        return Figure(value, low, high, len(kept))

    # Per paper, the sums of the proxy errors over its humans (each held out in turn
    # against the mean of the others), so a resample adds them up instead of recomputing.
    proxy_sums = np.array([_proxy_sums(r, h) for r, h in zip(rating, humans, strict=True)])
    if not len(proxy_sums):
        proxy_sums = np.zeros((0, 5))

    def proxy(column: int) -> Callable[[np.ndarray], float | None]:
        def stat(index: np.ndarray) -> float | None:
            count = proxy_sums[index, 4].sum()
            return float(proxy_sums[index, column].sum() / count) if count else None

        return stat

    return Evaluation(
        papers=len(kept),
        mae=figure(lambda x: float(np.mean(np.abs(rating[x] - mean[x])))),
        mse=figure(lambda x: float(np.mean(np.square(rating[x] - mean[x])))),
        proxy_mae=figure(proxy(0)),
        proxy_mse=figure(proxy(1)),
        human_proxy_mae=figure(proxy(2)),
        human_proxy_mse=figure(proxy(3)),
        spearman=figure(lambda x: _spearman(rating[x], mean[x])),
        decision_accuracy=figure(lambda x: float(np.mean([said[i] == truth[i] for i in x]))),
        decision_macro_f1=figure(lambda x: _macro_f1([truth[i] for i in x], [said[i] for i in x])),
        pairwise_accuracy=figure(lambda x: _pairwise(rating[x], mean[x])),
        missing=missing,
    )


def _proxy_sums(rating: float, humans: list[float]) -> tuple[float, float, float, float, int]:
    """For one paper: the reviewer's and the humans' absolute and squared errors against
    each human's held-out target (the mean of the paper's other humans), summed, and how
    many targets (none with a single human)."""
    if len(humans) < 2:
        return 0.0, 0.0, 0.0, 0.0, 0
    total = sum(humans)
    targets = [(total - h) / (len(humans) - 1) for h in humans]
    model = [rating - t for t in targets]
    human = [h - t for h, t in zip(humans, targets, strict=True)]
    return (
        sum(map(abs, model)),
        sum(e * e for e in model),
        sum(map(abs, human)),
        sum(e * e for e in human),
        len(humans),
    )


def _decision(prediction: Prediction, accept_rating: float) -> Decision:
    if prediction.decision is not None:
        return prediction.decision
    return "accept" if prediction.rating >= accept_rating else "reject"


def _spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return None
    # imported here: a command that evaluates no reviewer starts without scipy
    from scipy import stats

    return float(stats.spearmanr(x, y).statistic)


def _macro_f1(truth: Sequence[str], said: Sequence[str]) -> float:
    """The mean over accept and reject of F1 (a class never said nor true counts 0 when
    the other is present: scikit-learn's `zero_division=0`)."""
    scores = []
    for label in ("accept", "reject"):
        tp = sum(t == label and s == label for t, s in zip(truth, said, strict=True))
        fp = sum(t != label and s == label for t, s in zip(truth, said, strict=True))
        fn = sum(t == label and s != label for t, s in zip(truth, said, strict=True))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return float(np.mean(scores))


def _pairwise(rating: np.ndarray, mean: np.ndarray) -> float | None:
    humans = np.sign(mean[:, None] - mean[None, :])
    reviewer = np.sign(rating[:, None] - rating[None, :])
    ordered = np.triu(humans != 0, 1)  # pairs the humans order (a paper drawn twice: not)
    pairs = int(ordered.sum())
    if not pairs:
        return None
    agree = ((reviewer == humans) & ordered).sum() + 0.5 * ((reviewer == 0) & ordered).sum()
    return float(agree / pairs)


def _interval(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
