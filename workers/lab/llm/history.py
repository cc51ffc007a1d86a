"""What an `llm` run's events say: its phase, its model calls, its usage, its replies."""

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from openai.types.chat import ChatCompletion

from events.payloads import (
    ExperimentScored,
    ModelCalled,
    ModelFailed,
    ModelResponded,
    Payload,
    PhaseEntered,
)
from events.payloads.model import Phase, Usage
from workers.lab.llm import phases, text_protocol
from workers.llm.reply import Reply, parse_reply

BlobReader = Callable[[str], bytes | None]


@dataclass
class LlmHistory:
    """The model-side fold of a run's stream."""

    phase: Phase | None = None
    calls_in_phase: int = 0
    """Logical requests (first attempts) made since the phase began."""
    tokens: int = 0
    """Budgeted tokens: the run's model calls and the gradings of its attempts."""
    dollars: float = 0.0
    unknown_cost_calls: int = 0
    unpriced_gradings: int = 0
    """Gradings that called a model whose cost is unknown."""
    calls: dict[str, ModelCalled] = field(default_factory=dict)
    outcomes: dict[str, ModelResponded | ModelFailed] = field(default_factory=dict)
    phase_at_call: dict[str, Phase | None] = field(default_factory=dict)

    def pending(self) -> list[ModelCalled]:
        """Calls recorded with no outcome (in flight, or interrupted)."""
        return [c for cid, c in self.calls.items() if cid not in self.outcomes]


def fold_history(payloads: list[Payload]) -> LlmHistory:
    """The model-side state of the run whose stream's payloads are `payloads`."""
    history = LlmHistory()
    for payload in payloads:
        if isinstance(payload, PhaseEntered):
            history.phase, history.calls_in_phase = payload.phase, 0
        elif isinstance(payload, ModelCalled):
            history.calls[payload.call_id] = payload
            history.phase_at_call[payload.call_id] = history.phase
            if payload.attempt == 1:
                history.calls_in_phase += 1
        elif isinstance(payload, ModelResponded):
            history.outcomes[payload.call_id] = payload
            history.tokens += usage_tokens(payload.usage)
            if payload.cost_usd is not None:
                history.dollars += payload.cost_usd
            else:
                history.unknown_cost_calls += 1
        elif isinstance(payload, ModelFailed):
            history.outcomes[payload.call_id] = payload
        elif isinstance(payload, ExperimentScored) and payload.grader_usage:
            history.tokens += mapping_tokens(payload.grader_usage)
            history.dollars += payload.grader_cost_usd or 0.0
            history.unknown_cost_calls += payload.grader_cost_usd is None
            history.unpriced_gradings += payload.grader_cost_usd is None
    return history


def reply_of(
    responded: ModelResponded, phase: Phase | None, protocol: str, read_blob: BlobReader
) -> Reply:
    """The parsed answer of a recorded call, from its response blob."""
    names = frozenset(phases.TOOLS_BY_PHASE[phase or "plan"])
    completion = _completion(responded.response.sha256, read_blob) if responded.response else None
    if completion is None:
        return Reply(responded.preview, (), responded.finish_reason, _text(responded.preview))
    reply = parse_reply(completion, names)
    if protocol == "text":
        calls = text_protocol.parse(reply.text, responded.call_id, names)
        return Reply(reply.text, calls, reply.finish_reason, _text(reply.text or ""))
    return reply


def _text(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": text}


_PARSED: OrderedDict[str, ChatCompletion] = OrderedDict()
_PARSED_LOCK = threading.Lock()
_PARSED_MAX = 4096


def _completion(sha256: str, read_blob: BlobReader) -> ChatCompletion | None:
    """A recorded response, parsed; cached by hash (blobs never change), since every step
    of a run rebuilds its conversation from all of the run's answers."""
    with _PARSED_LOCK:
        if sha256 in _PARSED:
            _PARSED.move_to_end(sha256)
            return _PARSED[sha256]
    data = read_blob(sha256)
    if data is None:
        return None
    completion = ChatCompletion.construct(**orjson.loads(data))
    with _PARSED_LOCK:
        _PARSED[sha256] = completion
        while len(_PARSED) > _PARSED_MAX:
            _PARSED.popitem(last=False)
    return completion


def usage_tokens(usage: Usage | None) -> int:
    """The tokens a budget counts for one answer: input plus output, 0 when unreported."""
    return 0 if usage is None else usage.input_tokens + usage.output_tokens


def mapping_tokens(usage: Mapping[str, Any] | None) -> int:
    """`usage_tokens` of a usage as stored in an event (`usage` of `model.responded`,
    `grader_usage` of `experiment.scored`): input plus output, 0 when absent."""
    return 0 if not usage else usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
