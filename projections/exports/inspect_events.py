"""A run's events as Inspect AI transcript events (`inspect_ai.event`), in log order:
a `model` event per model call (its input as references into the sample's message pool,
the way Inspect condenses its own logs: `events_data`), a `tool` event per tool call, a
`score` event per scored attempt, and an `info` event (source: the event type, data:
its payload) for every other event, so nothing the log holds about the run is left out.
"""

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import orjson

from events import Event
from events.payloads import (
    ExperimentScored,
    ModelCalled,
    ModelFailed,
    ModelResponded,
    ToolInvoked,
    ToolReturned,
)
from projections.exports.conversation import BlobReader, Exchange, tool_output
from projections.exports.inspect_messages import (
    Message,
    inspect_messages,
    stop_reason,
    tool_infos,
)
from runstate.budget import stood_stopped, wall_seconds
from runstate.state import RunState


class MessagePool:
    """Messages kept once each; a model event's input is ranges of their indices."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._index: dict[bytes, int] = {}

    def refs(self, messages: Sequence[Message]) -> list[list[int]]:
        """`messages` as `[start, end)` ranges of the pool, adding those it lacks."""
        ranges: list[list[int]] = []
        for message in messages:
            key = orjson.dumps(message, option=orjson.OPT_SORT_KEYS)
            index = self._index.get(key)
            if index is None:
                index = self._index[key] = len(self.messages)
                self.messages.append(message | {"id": f"pool-{index}"})
            if ranges and ranges[-1][1] == index:
                ranges[-1][1] = index + 1
            else:
                ranges.append([index, index + 1])
        return ranges


def call_usage(exchange: Exchange) -> dict[str, Any] | None:
    """One answered call's tokens as Inspect's `ModelUsage` (None when none were reported)."""
    usage = exchange.responded.usage
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "input_tokens_cache_read": usage.cached_input_tokens,
        "input_tokens_cache_write": usage.cache_creation_input_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "total_cost": exchange.responded.cost_usd if exchange.responded.cost_known else None,
    }


def model_output(exchange: Exchange) -> dict[str, Any]:
    """An answered call's response as Inspect's `ModelOutput`."""
    model = exchange.responded.model
    (message,) = inspect_messages([exchange.answer], model)
    text = message["content"] if isinstance(message["content"], str) else ""
    choice = {"message": message, "stop_reason": stop_reason(exchange.finish_reason)}
    return {
        "model": model,
        "choices": [choice],
        "completion": text,
        "usage": call_usage(exchange),
        "time": exchange.responded.latency_s,
    }


def transcript(
    events: Sequence[Event],
    answered: Sequence[Exchange],
    pool: MessagePool,
    read: BlobReader,
    began: RunState | None = None,
) -> list[dict[str, Any]]:
    """The run's events as Inspect events (`answered`: its exchanges, by which model
    events get their input and output; `began`: its state as it begins, whence its
    working time counts: `working_starts`)."""
    working = working_starts(events, began)
    by_call = {e.called.call_id: e for e in answered}
    called: dict[str, tuple[Event, ModelCalled]] = {}
    invoked: dict[str, tuple[Event, ToolInvoked]] = {}
    found: list[dict[str, Any]] = []

    def base(kind: str, event: Event) -> dict[str, Any]:
        return {
            "event": kind,
            "uuid": str(event.id),
            "timestamp": event.occurred_at.isoformat(),
            "working_start": working[event.id],
            "metadata": {"position": event.position, "type": event.type},
        }

    for event in events:
        payload = event.payload
        if isinstance(payload, ModelCalled):
            called[payload.call_id] = (event, payload)
        elif isinstance(payload, ModelResponded | ModelFailed) and payload.call_id in called:
            first, asked = called.pop(payload.call_id)
            item = base("model", first)
            item |= {"model": asked.model, "tool_choice": "auto", "config": {}}
            item |= {"completed": event.occurred_at.isoformat(), "working_time": payload.latency_s}
            exchange = by_call.get(payload.call_id)
            if exchange is not None:
                request = exchange.request
                item["input"] = []
                item["input_refs"] = pool.refs(inspect_messages(request.get("messages", [])))
                item["tools"] = tool_infos(request.get("tools") or [])
                item["output"] = model_output(exchange)
            else:
                item |= {"input": [], "tools": [], "output": {"model": asked.model}}
            if isinstance(payload, ModelFailed):
                item["error"] = f"{payload.error}: {payload.detail}"
            item["metadata"] |= {"call_id": asked.call_id, "attempt": asked.attempt}
            found.append(item)
        elif isinstance(payload, ToolInvoked):
            invoked[payload.call_id] = (event, payload)
        elif isinstance(payload, ToolReturned) and payload.call_id in invoked:
            first, asked_tool = invoked.pop(payload.call_id)
            found.append(_tool(base("tool", first), asked_tool, payload, event, read))
        elif isinstance(payload, ExperimentScored):
            value = payload.score if payload.normalized_score is None else payload.normalized_score
            score = {
                "value": value,
                "explanation": f"attempt {payload.attempt}: score {payload.score}",
                "metadata": {"subtask_scores": payload.subtask_scores, "raw_score": payload.score},
            }
            scored = {"score": score, "intermediate": True, "scorer": payload.grader}
            found.append(base("score", event) | scored)
        else:
            data = orjson.loads(payload.model_dump_json())
            found.append(base("info", event) | {"source": event.type, "data": data})
    for first, asked in called.values():  # a call of unknown outcome (the worker died)
        data = orjson.loads(asked.model_dump_json())
        found.append(base("info", first) | {"source": first.type, "data": data})
    for first, asked_tool in invoked.values():  # a call whose result never came
        found.append(_tool(base("tool", first), asked_tool, None, None, read))
    return found


def working_starts(events: Sequence[Event], began: RunState | None = None) -> dict[UUID, float]:
    """Each event's working start: the wall time the run had used when it occurred
    (`runstate.budget.wall_seconds`: the time it stood stopped, from each
    `run.interrupted` to its `run.resumed`, is no working time, as it is none of the
    sample's `working_time`). `began`: the run's state as it begins (`runstate.fork.begin`),
    a fork's going on from the time the trajectory it stands on had used at the fork
    point; without it, the run's time counts from its first event here."""
    found: dict[UUID, float] = {}
    if not events:
        return found
    start, stopped_s = events[0].occurred_at, 0.0
    if began is not None:
        start, stopped_s = began.started_at, began.stopped_s
    stopped_at = None
    for event in events:
        at = event.occurred_at
        stopped_s, stopped_at = stood_stopped(stopped_s, stopped_at, event.type, at)
        found[event.id] = max(0.0, wall_seconds(start, stopped_s, stopped_at, at))
    return found


def _tool(
    item: dict[str, Any],
    invoked: ToolInvoked,
    returned: ToolReturned | None,
    event: Event | None,
    read: BlobReader,
) -> dict[str, Any]:
    item |= {"type": "function", "id": invoked.call_id, "function": invoked.tool}
    item |= {"arguments": dict(invoked.args)}
    if returned is None or event is None:
        return item | {"result": "", "pending": True}
    item |= {"result": tool_output(returned, read), "completed": event.occurred_at.isoformat()}
    item["working_time"] = returned.duration_s
    if returned.exit_code != 0:
        kind = "limit" if returned.limit else "unknown"
        item["error"] = {"type": kind, "message": f"exit code {returned.exit_code}"}
        item["failed"] = True
    return item
