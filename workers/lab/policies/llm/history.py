"""The replies of an `llm` run's model, parsed from their recorded response bodies."""

import hashlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import orjson

from events.bounded_cache import BoundedCache
from events.payloads import (
    ModelResponded,
)
from events.payloads.model import Phase
from workers.lab.policies.llm import phases, text_protocol
from workers.llm.reply import Reply, ToolCall, chat_completion, parse_reply

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

BlobReader = Callable[[str], bytes | None]
ParsedResponses = BoundedCache[str, "ChatCompletion"]
"""Recorded responses, parsed, by hash (blobs never change), kept by a worker
(`LlmPolicy.parsed`): every step of a run rebuilds its conversation from all of the run's
answers."""
PARSED_KEPT = 4096
"""Parsed responses a worker keeps."""


def reply_of(
    responded: ModelResponded,
    phase: Phase | None,
    protocol: str,
    read_blob: BlobReader,
    parsed: ParsedResponses | None = None,
) -> Reply:
    """The parsed answer of a recorded call, from its response blob (parsed once if
    `parsed` keeps it)."""
    phase = phase or "plan"
    names = frozenset(phases.TOOLS_BY_PHASE[phase])
    response = responded.response
    completion = _completion(response.sha256, read_blob, parsed) if response else None
    if completion is None:
        return Reply(responded.preview, (), responded.finish_reason, _text(responded.preview))
    reply = parse_reply(completion, names)
    if protocol == "text":
        calls = text_protocol.parse(reply.text, responded.call_id, names)
        calls = tuple(_offered_elsewhere(call, phase, names) for call in calls)
        return Reply(reply.text, calls, reply.finish_reason, _text(reply.text or ""))
    seen: set[str] = set()
    logged: list[ToolCall] = []
    for call in reply.tool_calls:
        server_id = call.id or ""  # some servers leave a call's id out
        twice = len(logged) if server_id in seen else None
        seen.add(server_id)
        logged_id = logged_call_id(responded.call_id, server_id, twice)
        told = _offered_elsewhere(call, phase, names)
        logged.append(replace(told, id=logged_id, server_id=server_id))
    return replace(reply, tool_calls=tuple(logged))


def _offered_elsewhere(call: ToolCall, phase: Phase, names: frozenset[str]) -> ToolCall:
    """A call of a tool that another phase offers (`finish` while planning), told so
    rather than as an unknown tool: the model knows the tool, and learns when it may
    call it."""
    if call.name in names or not any(call.name in t for t in phases.TOOLS_BY_PHASE.values()):
        return call
    offered = ", ".join(sorted(names))
    problem = f"{call.name} is not offered in the {phase} phase; the tools now are {offered}"
    return replace(call, problem=problem)


SERVER_ID_CHARS = 64
"""A server's tool call id longer than this is cut, with a digest of the whole."""


def logged_call_id(model_call_id: str, server_id: str, index: int | None = None) -> str:
    """The id a tool call is recorded under: the server's, with the model call that asked
    for it (its request's version and attempt: `12/1`), so it is unique in the run.

    Servers reuse ids from one answer to the next (some send call_0, call_1… in every
    answer), and the ledger keys a tool call, and pairs its `tool.returned` with its
    `tool.invoked`, by id within the run: one row stood for all the calls of one id.
    `index`, the call's place in its answer, is added when the answer gave the id twice.
    A recorded run's results are matched to its answers' calls by these ids each time
    its conversation is rebuilt: this format must never change.
    """
    if len(server_id) > SERVER_ID_CHARS:
        digest = hashlib.sha256(server_id.encode()).hexdigest()[:16]
        server_id = f"{server_id[: SERVER_ID_CHARS - 17]}~{digest}"
    request = model_call_id.rsplit(":", 1)[-1][:40]
    suffix = "" if index is None else f"#{index}"
    return f"{server_id}@{request}{suffix}"


def _text(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": text}


def _completion(
    sha256: str, read_blob: BlobReader, parsed: ParsedResponses | None
) -> "ChatCompletion | None":
    """A recorded response, parsed (kept in `parsed`, when given)."""
    known = parsed.get(sha256) if parsed is not None else None
    if known is not None:
        return known
    data = read_blob(sha256)
    if data is None:
        return None
    completion = chat_completion(orjson.loads(data))
    if parsed is not None:
        parsed.put(sha256, completion)
    return completion
