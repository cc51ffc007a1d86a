"""The conversation an `llm` lab's model sees, rebuilt from the run's events every call.

Rebuilding from the log is what lets any worker take the next step after a crash.
Truncation rule (explicit, recorded as `context.truncated`): when the estimated size
(4 characters a token) passes 3/4 of the model's context, the oldest exchanges
(an answer with its tool results) are dropped, oldest first, keeping the system
prompt, the task brief and the latest exchange; a note says how many were dropped.
"""

from dataclasses import dataclass
from typing import Any

import orjson

from events.payloads import (
    ContextTruncated,
    LlmConfig,
    ModelResponded,
    Payload,
    PhaseEntered,
    ToolReturned,
)
from workers.gym.card import TaskCard
from workers.lab.llm import phases, text_protocol
from workers.lab.llm.history import BlobReader, LlmHistory, reply_of
from workers.lab.state import RunState

NUDGE = "Continue: call one of your tools (or next_phase when this phase is done)."


@dataclass(frozen=True)
class Conversation:
    """The messages and tools of the next call, and the truncation applied, if any."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    truncated: ContextTruncated | None


def build(
    state: RunState,
    payloads: list[Payload],
    card: TaskCard,
    config: LlmConfig,
    history: LlmHistory,
    read_blob: BlobReader,
) -> Conversation:
    """The conversation for the run's next model call."""
    phase = history.phase or phases.first_phase(state.started.reads_archive)
    schemas = phases.tool_schemas(phase)
    text_mode = config.tool_protocol == "text"
    system = _system(state, card, phase, history, schemas if text_mode else None)
    head = [{"role": "system", "content": system}, {"role": "user", "content": _brief(card)}]
    groups = _exchanges(payloads, config, history, read_blob)
    messages, truncated = _fit(head, groups, config.context_tokens * 3 // 4)
    return Conversation(messages, [] if text_mode else schemas, truncated)


def _exchanges(
    payloads: list[Payload], config: LlmConfig, history: LlmHistory, read_blob: BlobReader
) -> list[list[dict[str, Any]]]:
    groups: list[list[dict[str, Any]]] = []
    text_mode = config.tool_protocol == "text"
    open_ids: set[str] = set()
    """The tool calls of the latest answer: their results follow it."""
    for payload in payloads:
        if isinstance(payload, PhaseEntered):
            groups.append([{"role": "user", "content": phases.INSTRUCTIONS[payload.phase]}])
        elif isinstance(payload, ModelResponded):
            phase = history.phase_at_call.get(payload.call_id)
            reply = reply_of(payload, phase, config.tool_protocol, read_blob)
            group = [reply.message]
            open_ids = {call.id for call in reply.tool_calls}
            if not reply.tool_calls:
                group.append({"role": "user", "content": NUDGE})
            groups.append(group)
        elif isinstance(payload, ToolReturned) and payload.call_id in open_ids:
            content = payload.preview or "(no output)"
            if text_mode:
                message = {"role": "user", "content": f"Result of {payload.tool}:\n{content}"}
            else:
                message = {"role": "tool", "tool_call_id": payload.call_id, "content": content}
            groups[-1].append(message)
    return groups


def _fit(
    head: list[dict[str, Any]], groups: list[list[dict[str, Any]]], limit: int
) -> tuple[list[dict[str, Any]], ContextTruncated | None]:
    before = _tokens(head, groups)
    dropped = 0
    kept = list(groups)
    while len(kept) > 1 and _tokens(head, kept) > limit:
        dropped += len(kept.pop(0))
    messages = list(head)
    if dropped:
        note = f"({dropped} earlier messages were dropped to fit the context.)"
        messages.append({"role": "user", "content": note})
    messages += [m for group in kept for m in group]
    if not dropped:
        return messages, None
    truncated = ContextTruncated(
        rule="drop_oldest",
        tokens_before=before,
        tokens_after=_tokens(messages, []),
        dropped_messages=dropped,
    )
    return messages, truncated


def _tokens(head: list[dict[str, Any]], groups: list[list[dict[str, Any]]]) -> int:
    """A size estimate for the truncation rule only; the ledger uses the API's usage."""
    size = len(orjson.dumps(head)) + sum(len(orjson.dumps(g)) for g in groups)
    return size // 4


def _system(
    state: RunState,
    card: TaskCard,
    phase: str,
    history: LlmHistory,
    text_tools: list[dict[str, Any]] | None,
) -> str:
    budget = state.started.budget
    used = [f"{len(state.attempts)} of {budget.attempts or 'unlimited'} attempts"]
    if budget.tokens:
        used.append(f"{history.tokens} of {budget.tokens} tokens")
    if budget.dollars:
        used.append(f"${history.dollars:.4f} of ${budget.dollars}")
    parts = [
        f"You are {state.lab}, an autonomous research lab working on the task "
        f"'{card.title}'. You act only through tools, in a sandboxed workspace with no "
        "network. Scores come only from the task's grader (the evaluate tool).",
        f"Papers: {len(state.papers)} of {state.started.papers} written. Used: {', '.join(used)}.",
        phases.INSTRUCTIONS[phase],  # type: ignore[index]
    ]
    if text_tools is not None:
        parts.append(text_protocol.describe(text_tools))
    return "\n\n".join(parts)


def _brief(card: TaskCard) -> str:
    subtasks = "\n".join(
        f"- {s.name}: {s.metric}, {s.direction}; baseline {s.baseline}, best known {s.sota}"
        + (" (primary)" if s.name == card.primary else "")
        for s in card.subtasks
    )
    space = "\n".join(f"- {k}: {v}" for k, v in card.search_space.items()) or "- (free)"
    return (
        f"# {card.title}\n\n{card.goal.strip()}\n\n## Subtasks\n{subtasks}\n\n"
        f"## Workspace\nThe solution is `{card.entrypoint}`; it reads `config.json` and "
        "`data/` and writes `outputs/`. Parameters the starter solution understands:\n"
        f"{space}"
    )
