"""Shared by the gateway tests (imported by bare name: pytest puts this folder on the path)."""

from collections.abc import Callable, Mapping

from events.blobs import BlobRef
from events.payloads import ModelResponded, Payload
from workers.llm import CallOutcome, Gateway, ModelRequest, ToolCall
from workers.llm.reply import Reply

API_KEY = "sk-labrxiv-test-" + "Zq7" * 12
"""A key shaped like a real one; no event, blob or log line may contain it."""


class Sleeps(list[float]):
    """A `sleep` that records how long it was asked to wait instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


Record = Callable[[Payload, Mapping[str, bytes]], None]
"""Records one event with its blobs, returning only once it is in the log."""


def call_until_done(
    gateway: Gateway, request: ModelRequest, record: Record, sleep: Callable[[float], None]
) -> CallOutcome:
    """Attempt `request` until it is answered, fails for good, or attempts run out,
    recording each `model.called` before its attempt is sent and waiting each retry out
    with `sleep`: the gateway's write-ahead loop, whole, for tests of its attempts."""
    for attempt in range(1, gateway.max_attempts + 1):
        prepared = gateway.prepare(request, attempt)
        record(prepared.called, prepared.blobs)
        outcome = gateway.send(prepared)
        record(outcome.event, outcome.blobs)
        if outcome.retry_in_s is None:
            return outcome
        sleep(outcome.retry_in_s)
    raise AssertionError("the last attempt never asks for a retry")


def problems(reply: Reply) -> tuple[ToolCall, ...]:
    """The reply's tool calls that cannot run."""
    return tuple(call for call in reply.tool_calls if call.problem is not None)


def unpriced_answer(
    call_id: str, preview: str = "", response: BlobRef | None = None
) -> ModelResponded:
    """A recorded answer of model `m` with no usage and no price."""
    return ModelResponded(
        call_id=call_id,
        model="m",
        usage=None,
        latency_s=0.1,
        price=None,
        cost_usd=None,
        cost_known=False,
        preview=preview,
        response=response,
    )
