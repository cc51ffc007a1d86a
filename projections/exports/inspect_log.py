"""Runs as an Inspect AI eval log (`.eval`): the zip `inspect_ai.log.read_eval_log`
reads and `inspect view` shows, one sample per run (`projections.exports.inspect_sample`).

The zip holds `header.json` (the `EvalLog` without its samples: `version`, `status`,
`eval`, `plan`, `results`, `stats`), `samples/{id}_epoch_1.json` per run,
`summaries.json` (the samples' summaries) and `reductions.json` (each scorer's score
per sample). Members are deflated (Inspect writes zstd, and reads either).

The eval is the campaign (or the one run's campaign): its task, its runs as the
dataset, the policy as the plan's one step, the model the runs called (`none` when they
called none; the first by name when they called several, all of them in `metadata`,
with the calls of unknown cost by model).
The results are the mean and the best of the runs' best scores (`max`, or `min` for a
raw score the task minimizes: `runstate.best`) and the share that passed the integrity
check.
"""

import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import orjson

from projections.exports.conversation import BlobReader
from projections.exports.inspect_sample import (
    BEST,
    UNKNOWN_COST,
    VERDICT,
    inspect_usage,
    sample_of,
    summary_of,
    unknown_costs,
)
from projections.exports.runs import ExportedRun, ModelTokens
from runstate.best import NORMALIZED, best_ranked

LOG_VERSION = 2
"""The `EvalLog.version` Inspect AI writes today."""


def header_of(name: str, runs: Sequence[ExportedRun]) -> dict[str, Any]:
    """The `EvalLog` header of an eval named `name` (a campaign id) over `runs`."""
    starts = [r.view.first_event_at for r in runs if r.view.first_event_at is not None]
    ends = [r.view.last_event_at for r in runs if r.view.last_event_at is not None]
    created = min(starts) if starts else datetime.now(UTC)
    models = sorted({m for r in runs for m in r.usage})
    usage = _summed(runs)
    tasks = sorted({r.view.task or "" for r in runs})
    policies = sorted({r.view.policy or "" for r in runs})
    return {
        "version": LOG_VERSION,
        "status": "success" if all(r.view.finished for r in runs) else "started",
        "eval": {
            "eval_id": f"labrxiv-{name}",
            "run_id": name,
            "created": created.isoformat(),
            "task": ", ".join(tasks),
            "task_id": name,
            "task_version": 0,
            "dataset": {
                "name": name,
                "samples": len(runs),
                "sample_ids": [r.view.stream for r in runs],
                "shuffled": False,
            },
            "model": models[0] if models else "none",
            "config": {"epochs": 1},
            "packages": {"labrxiv": _labrxiv_version()},
            "metadata": {
                "campaign": name,
                "models": models,
                "policies": policies,
                UNKNOWN_COST: unknown_costs(usage),
            },
            "scorers": [{"name": BEST}, {"name": VERDICT}],
        },
        "plan": {"name": "plan", "steps": [{"solver": p, "params": {}} for p in policies]},
        "results": _results(runs),
        "stats": {
            "started_at": created.isoformat(),
            "completed_at": (max(ends) if ends else created).isoformat(),
            "model_usage": inspect_usage(usage),
        },
    }


def write_eval(path: Path, name: str, runs: Sequence[ExportedRun], read_blob: BlobReader) -> None:
    """Write the `.eval` zip of `runs` to `path` (OSError when it cannot be written)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for run in runs:
            sample = sample_of(run, read_blob)
            zipped.writestr(f"samples/{run.view.stream}_epoch_1.json", _json(sample))
        zipped.writestr("summaries.json", _json([summary_of(r) for r in runs]))
        zipped.writestr("reductions.json", _json(_reductions(runs)))
        zipped.writestr("header.json", _json(header_of(name, runs)))


def _results(runs: Sequence[ExportedRun]) -> dict[str, Any]:
    ranked = [
        (r.view.best_score, r.view.best_direction or NORMALIZED)
        for r in runs
        if r.view.best_score is not None
    ]
    judged = [r.verdict for r in runs if r.verdict is not None]
    scores = []
    top = best_ranked(ranked)
    if top is not None:
        best, way = top
        mean = sum(score for score, _ in ranked) / len(ranked)
        metrics = {"mean": mean, "max" if way == "maximize" else "min": best}
        scores.append(_score(BEST, len(ranked), len(runs), metrics))
    if judged:
        passed = sum(v == "PASS" for v in judged) / len(judged)
        scores.append(_score(VERDICT, len(judged), len(runs), {"pass_rate": passed}))
    return {
        "total_samples": len(runs),
        "completed_samples": sum(r.view.finished for r in runs),
        "scores": scores,
    }


def _score(name: str, scored: int, total: int, metrics: dict[str, float]) -> dict[str, Any]:
    return {
        "name": name,
        "scorer": name,
        "scored_samples": scored,
        "unscored_samples": total - scored,
        "params": {},
        "metrics": {key: {"name": key, "value": value} for key, value in metrics.items()},
    }


def _reductions(runs: Sequence[ExportedRun]) -> list[dict[str, Any]]:
    reductions = []
    for scorer in (BEST, VERDICT):
        samples = []
        for run in runs:
            score = summary_of(run)["scores"].get(scorer)
            if score is not None:
                samples.append(score | {"sample_id": run.view.stream})
        if samples:
            reductions.append({"scorer": scorer, "samples": samples})
    return reductions


def _summed(runs: Sequence[ExportedRun]) -> dict[str, ModelTokens]:
    total: dict[str, ModelTokens] = {}
    for run in runs:
        for model, tokens in run.usage.items():
            total[model] = total.get(model, ModelTokens()) + tokens
    return dict(sorted(total.items()))


def _labrxiv_version() -> str:
    try:
        return version("labrxiv")
    except PackageNotFoundError:
        return "unknown"


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
