"""The replies of an `llm` run's model, parsed from their recorded response bodies."""

import threading
from collections import OrderedDict
from collections.abc import Callable

import orjson
from openai.types.chat import ChatCompletion

from events.payloads import (
    ModelResponded,
)
from events.payloads.model import Phase
from workers.lab.policies.llm import phases, text_protocol
from workers.llm.reply import Reply, parse_reply

BlobReader = Callable[[str], bytes | None]


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
    completion = ChatCompletion.model_construct(**orjson.loads(data))
    with _PARSED_LOCK:
        _PARSED[sha256] = completion
        while len(_PARSED) > _PARSED_MAX:
            _PARSED.popitem(last=False)
    return completion
