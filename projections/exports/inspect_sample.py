"""One run as one Inspect AI sample (`inspect_ai.log.EvalSample`, epoch 1) and its
summary (`EvalSampleSummary`), field names as Inspect reads them.

- `id`: the run's stream; `input`: the conversation's first user message (the task's
  brief); `target`: empty (a research task has no one right answer).
- `messages`: the run's conversation (`projections.exports.conversation`); `output`:
  its last answer.
- `events`: the run's events (`projections.exports.inspect_events`), the model events'
  inputs pooled in `events_data`.
- `model_usage`: tokens and known costs by model, as the ledger counts them.
- `scores`: `best_score` (the runs read model's best score, normalized where the task
  has a SOTA) once an attempt was scored, and `verdict` (PASS, SUSPICIOUS or FAIL) once
  the findings read model judged the run.
- `metadata`: run, campaign, lab, task, policy, status, finish reason, verdict, best
  score, attempts and papers, and by model the calls of unknown cost (`unknown_costs`:
  in no `total_cost`).
"""

from typing import Any

from projections.exports.conversation import BlobReader
from projections.exports.inspect_events import MessagePool, model_output, transcript
from projections.exports.inspect_messages import inspect_messages
from projections.exports.runs import ExportedRun, ModelTokens

BEST = "best_score"
VERDICT = "verdict"
UNKNOWN_COST = "unknown_cost_calls"
"""The metadata key of `unknown_costs`."""


def inspect_usage(usage: dict[str, ModelTokens]) -> dict[str, dict[str, Any]]:
    """Model usage as Inspect's `ModelUsage` by model."""
    return {
        model: {
            "input_tokens": tokens.spend.input_tokens,
            "output_tokens": tokens.spend.output_tokens,
            "total_tokens": tokens.spend.tokens,
            "input_tokens_cache_read": tokens.spend.cached_input_tokens,
            "reasoning_tokens": tokens.spend.reasoning_tokens,
            "total_cost": tokens.cost_usd,
        }
        for model, tokens in usage.items()
    }


def unknown_costs(usage: dict[str, ModelTokens]) -> dict[str, int]:
    """By model, the answered calls and gradings whose cost is unknown, where there are
    any: Inspect's `ModelUsage` has no place for them (its `total_cost` sums the known
    costs, as Inspect sums its own), so the metadata says how many are in no total."""
    return {model: tokens.unknown_cost for model, tokens in usage.items() if tokens.unknown_cost}


def scores_of(run: ExportedRun) -> dict[str, dict[str, Any]]:
    """The run's Inspect scores: its best score and its verdict, where it has them."""
    scores: dict[str, dict[str, Any]] = {}
    view = run.view
    attempts = view.attempts + view.inherited_attempts  # a fork's best counts its parent's
    if view.best_score is not None:
        scores[BEST] = {
            "value": view.best_score,
            "explanation": f"best of {attempts} scored attempt(s), "
            f"in the {view.best_direction or 'maximize'} direction",
        }
    if run.verdict is not None:
        scores[VERDICT] = {"value": run.verdict, "explanation": "integrity verdict"}
    return scores


def metadata_of(run: ExportedRun) -> dict[str, Any]:
    """What a person filters samples by."""
    view = run.view
    return {
        "run": view.stream,
        "campaign": view.campaign,
        "lab": view.lab,
        "task": view.task,
        "policy": view.policy,
        "status": view.status,
        "finish_reason": view.finish_reason,
        "verdict": run.verdict,
        "best_score": view.best_score,
        "attempts": view.attempts,
        "papers": view.papers,
        "forked_from": view.forked_from,
        "conversation": run.conversation.source,
        UNKNOWN_COST: unknown_costs(run.usage),
    }


def sample_of(run: ExportedRun, read_blob: BlobReader) -> dict[str, Any]:
    """The run as an Inspect sample."""
    answered = run.answered
    model = answered[-1].responded.model if answered else None
    pool = MessagePool()
    events = transcript(run.events, answered, pool, read_blob, run.began)
    summary = summary_of(run)
    del summary["completed"], summary["message_count"]
    return summary | {
        "messages": [
            message | {"id": f"{run.view.stream}-{number}"}
            for number, message in enumerate(inspect_messages(run.conversation.messages, model))
        ],
        "output": model_output(answered[-1]) if answered else {"model": "none"},
        "events": events,
        "events_data": {"messages": pool.messages, "calls": []},
        "store": {},
        "attachments": {},
    }


def summary_of(run: ExportedRun) -> dict[str, Any]:
    """The run as Inspect's sample summary (what `summaries.json` lists)."""
    view = run.view
    first = run.events[0] if run.events else None
    return {
        "id": view.stream,
        "epoch": 1,
        "input": _input(run),
        "target": "",
        "metadata": metadata_of(run),
        "scores": scores_of(run),
        "model_usage": inspect_usage(run.usage),
        "started_at": None if view.first_event_at is None else view.first_event_at.isoformat(),
        "completed_at": None if view.last_event_at is None else view.last_event_at.isoformat(),
        "total_time": view.elapsed_seconds,
        "working_time": view.wall_seconds,
        "uuid": None if first is None else str(first.id),
        "completed": view.finished,
        "message_count": len(run.conversation.messages),
    }


def _input(run: ExportedRun) -> str:
    for message in run.conversation.messages:
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return f"Work on the research task {run.view.task}."
