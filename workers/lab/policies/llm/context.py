"""The conversation an `llm` lab's model sees, rebuilt from the run's state every call.

Rebuilding from the log is what lets any worker take the next step after a crash. The
run's folded state holds the conversation's groups (`RunState.exchanges`: a phase's
instructions, or an answer with its tools' results); the truncation rule
(`workers.lab.policies.llm.truncation`) keeps the newest groups that fit, and only those are
rendered into messages, so a call costs the same at a run's 10th step and its 10,000th.
"""

from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson

from events.payloads import ContextTruncated, LlmConfig
from runstate import Exchange, RunState
from workers.gym.card import TaskCard
from workers.gym.conditions import when
from workers.lab.policies.llm import phases, text_protocol
from workers.lab.policies.llm.history import BlobReader, ParsedResponses, reply_of
from workers.lab.policies.llm.truncation import (
    CHARS_PER_TOKEN,
    ExchangeSizes,
    Messages,
    first_kept,
)

NUDGE = "Continue: call one of your tools (or next_phase when this phase is done)."


@dataclass(frozen=True)
class Conversation:
    """The messages and tools of the next call, and the truncation applied, if any."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    truncated: ContextTruncated | None


def build(
    state: RunState,
    card: TaskCard,
    config: LlmConfig,
    read_blob: BlobReader,
    sizes: ExchangeSizes,
    final: int,
    parsed: ParsedResponses | None = None,
) -> Conversation:
    """The conversation for the run's next model call.

    `final`: how many of the state's exchanges can no longer change (they are measured
    once and remembered in `sizes`); `parsed`: the worker's parsed responses."""
    phase = state.phase or phases.first_phase(state.started.reads_archive)
    schemas = phases.tool_schemas(phase)
    text_mode = config.tool_protocol == "text"
    system = _system(state, card, phase, schemas if text_mode else None)
    head = [{"role": "system", "content": system}, {"role": "user", "content": brief(card)}]
    render = partial(group_messages, config=config, read_blob=read_blob, parsed=parsed)
    chars, counts = sizes.cumulative(state.stream, state.exchanges, final, render)
    head_chars = len(orjson.dumps(head))
    limit = config.context_tokens * 3 // 4
    kept = first_kept(chars, head_chars, limit)
    messages = list(head)
    if kept:
        note = f"({counts[kept]} earlier messages were dropped to fit the context.)"
        messages.append({"role": "user", "content": note})
    messages += sizes.messages(state.stream, state.exchanges, kept, final, render)
    tools = [] if text_mode else schemas
    size = head_chars + chars[-1] - chars[kept]  # measured once per exchange, not again
    most = CHARS_PER_TOKEN * limit
    if not kept and size <= most:
        return Conversation(messages, tools, None)
    if size > most:  # the latest exchange alone is longer than the context
        messages = messages[: len(head)] + _cut(messages[len(head) :], size - most)
    truncated = ContextTruncated(
        rule="drop_oldest",
        tokens_before=(head_chars + chars[-1]) // 4,
        tokens_after=len(orjson.dumps(messages)) // 4,
        dropped_messages=counts[kept] if kept else 0,
    )
    return Conversation(messages, tools, truncated)


CUT_NOTE = "\n[{cut} characters of this message were cut to fit the context]"
KEPT_CHARS = 2000
"""What is left of a text cut to fit the context, at least."""


def _cut(messages: Messages, over: int) -> Messages:
    """`messages` with their longest texts (answers, tool call arguments, tool results)
    cut, longest first, until they are `over` characters shorter, each keeping its first
    `KEPT_CHARS` and a note of how much was cut. The messages given are not changed."""
    fitted: Messages = [
        {**m, "tool_calls": [{**c, "function": dict(c["function"])} for c in m["tool_calls"]]}
        if m.get("tool_calls")
        else dict(m)
        for m in messages
    ]
    texts: list[tuple[dict[str, Any], str]] = []
    for message in fitted:
        if isinstance(message.get("content"), str):
            texts.append((message, "content"))
        texts += [(call["function"], "arguments") for call in message.get("tool_calls") or ()]
    for holder, key in sorted(texts, key=lambda text: -len(text[0][text[1]])):
        if over <= 0:
            break
        text: str = holder[key]
        keep = max(KEPT_CHARS, len(text) - over - len(CUT_NOTE) - 20)
        if keep >= len(text):
            break
        holder[key] = text[:keep] + CUT_NOTE.format(cut=len(text) - keep)
        over -= len(text) - len(holder[key])
    return fitted


def group_messages(
    exchange: Exchange,
    config: LlmConfig,
    read_blob: BlobReader,
    parsed: ParsedResponses | None = None,
) -> Messages:
    """The messages of one group: a phase's instructions, or an answer followed by the
    results of the tools it called (a nudge to use a tool when it called none)."""
    if exchange.answer is None:
        told = phases.INSTRUCTIONS[exchange.entered or "plan"]
        return [
            {"role": "user", "content": f"{told}\n\n{exchange.note}" if exchange.note else told}
        ]
    reply = reply_of(exchange.answer, exchange.phase, config.tool_protocol, read_blob, parsed)
    group = [reply.message]
    if not reply.tool_calls:
        group.append({"role": "user", "content": NUDGE})
    called = {call.id: call for call in reply.tool_calls}
    # A run recorded before tool calls were logged under their own ids has the server's.
    called |= {call.server_id: call for call in reply.tool_calls if call.server_id}
    for result in exchange.results:
        call = called.get(result.call_id)
        if call is None:
            continue
        content = result.preview or "(no output)"
        if config.tool_protocol == "text":
            group.append({"role": "user", "content": f"Result of {result.tool}:\n{content}"})
        else:
            group.append({"role": "tool", "tool_call_id": call.answer_id, "content": content})
    return group


def _system(
    state: RunState,
    card: TaskCard,
    phase: str,
    text_tools: list[dict[str, Any]] | None,
) -> str:
    budget = state.started.budget
    used = [f"{len(state.attempts)} of {budget.attempts or 'unlimited'} attempts"]
    if budget.tokens:
        used.append(f"{state.spend.tokens} of {budget.tokens} tokens")
    if budget.dollars:
        used.append(f"${state.spend.dollars:.4f} of ${budget.dollars}")
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


def brief(card: TaskCard) -> str:
    """The task as a lab is told it: goal, subtasks, the workspace (an `llm` lab's first
    message, an agent's TASK.md)."""
    subtasks = "\n".join(
        f"- {s.name}: {s.metric}, {s.direction}; baseline {s.baseline}, best known {s.sota}"
        + (" (primary)" if s.name == card.primary else "")
        for s in card.subtasks
    )
    space = "\n".join(_parameter(card, key) for key in card.search_space) or "- (free)"
    return (
        f"# {card.title}\n\n{card.goal.strip()}\n\n## Subtasks\n{subtasks}\n\n"
        f"## Workspace\nThe solution is `{card.entrypoint}`; it reads `config.json` and "
        "`data/` and writes `outputs/`. Parameters the starter solution understands:\n"
        f"{space}"
    )


def _parameter(card: TaskCard, key: str) -> str:
    """One parameter of the search space as a lab is told it: its values, and when it
    applies if it applies only under conditions."""
    line = f"- {key}: {card.search_space[key]}"
    if applies := when(card.search_space_conditions, key):
        line += f" (applies only when {applies}; it has no effect otherwise)"
    return line
