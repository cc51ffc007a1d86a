"""An agent run's exports read straight from its log: its conversation and fine-tuning
line (checked as OpenAI's format), and its Inspect model events' inputs and outputs."""

from collections.abc import Sequence
from typing import Any

from events import Event
from events.payloads import ModelResponded
from projections.exports.conversation import BlobReader, Conversation, conversation_of, exchanges
from projections.exports.finetune import example
from projections.exports.inspect_events import MessagePool, transcript
from tests.exports.finetune_format import paired, validate


def exported(events: Sequence[Event], read: BlobReader) -> tuple[Conversation, dict[str, Any]]:
    """The run's conversation and its fine-tuning line, checked as OpenAI's format; every
    answered model call is read."""
    answered = exchanges(events, read)
    responded = [e for e in events if isinstance(e.payload, ModelResponded)]
    assert len(answered) == len(responded), "every answered call is read"
    conversation = conversation_of(events, answered, read)
    assert conversation.source == "model"
    line = example(conversation)
    assert line is not None
    validate(line)
    paired(line["messages"])
    return conversation, line


def model_events(
    events: Sequence[Event], read: BlobReader
) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """Each Inspect model event's input (its messages, resolved from the pool) and output."""
    pool = MessagePool()
    found = transcript(events, exchanges(events, read), pool, read)
    shown = []
    for item in found:
        if item["event"] != "model":
            continue
        refs = item["input_refs"]
        given = [pool.messages[i] for start, end in refs for i in range(start, end)]
        shown.append(([{k: v for k, v in m.items() if k != "id"} for m in given], item["output"]))
    return shown
