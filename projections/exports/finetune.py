"""Runs as training examples in OpenAI's chat fine-tuning format: one JSON object a
line, `{"messages": [...], "tools": [...]}`, a run's conversation
(`projections.exports.conversation`) with each message cut to the keys its role has
there (`role`, `content`, `tool_calls`, `tool_call_id`; a `developer` message is a
`system` one). A run with no conversation gives no line; the filters keep the runs of
the given verdicts and the runs whose best score reaches a minimum (in its direction).
"""

from collections.abc import Collection, Sequence
from typing import Any

from projections.exports.conversation import Conversation, Message
from projections.exports.runs import ExportedRun
from runstate.best import NORMALIZED, better

KEYS = {
    "system": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "tool_calls", "name"),
    "tool": ("role", "content", "tool_call_id"),
}
"""The keys each role's message keeps."""


def kept(
    runs: Sequence[ExportedRun],
    verdicts: Collection[str] = (),
    min_score: float | None = None,
) -> list[ExportedRun]:
    """The runs whose verdict is one of `verdicts` (any, when none is given) and whose
    best score reaches `min_score` in the best score's direction (`runstate.best`: at
    least it when maximized, at most it when minimized; a run with no score has none to
    reach)."""
    chosen = []
    for run in runs:
        if verdicts and run.verdict not in verdicts:
            continue
        best, way = run.view.best_score, run.view.best_direction or NORMALIZED
        if min_score is not None and (best is None or better(way, min_score, best)):
            continue
        chosen.append(run)
    return chosen


def example_of(run: ExportedRun) -> dict[str, Any] | None:
    """The run's training example; None when it has no conversation."""
    return example(run.conversation)


def example(conversation: Conversation) -> dict[str, Any] | None:
    """The training example of `conversation`; None when it has no messages."""
    if not conversation.messages:
        return None
    example: dict[str, Any] = {"messages": [_message(m) for m in conversation.messages]}
    if conversation.tools:
        example["tools"] = conversation.tools
    return example


def _message(message: Message) -> Message:
    role = "system" if message.get("role") == "developer" else str(message.get("role"))
    shaped = {key: message[key] for key in KEYS.get(role, KEYS["user"]) if key in message}
    shaped["role"] = role
    if shaped.get("content") is None and not shaped.get("tool_calls"):
        shaped["content"] = ""
    return shaped
