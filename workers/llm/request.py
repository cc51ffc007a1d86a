"""What a lab asks a model for, and a call prepared from it (ready to be written ahead).

A prepared call is pure data computed from the request and the attempt number: the
`model.called` payload and the request body as a blob. Preparing the same request
twice gives the same call id and the same blob, so a lab step delivered twice
publishes the same events.
"""

from dataclasses import dataclass, field
from typing import Any

import orjson

from events.blobs import blob_ref
from events.payloads.model import ModelCalled, Phase


@dataclass(frozen=True)
class ModelRequest:
    """One logical chat-completion request; its physical attempts share `request_id`."""

    request_id: str
    """Chosen by the caller, stable across redeliveries (e.g. the run stream and version)."""
    model: str
    messages: list[dict[str, Any]]
    """OpenAI chat messages (role, content, tool_calls, tool_call_id…)."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """OpenAI function declarations, e.g. `[spec.schema() for spec in TOOLS.values()]`."""
    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: str | None = None
    """`auto`, `none` or `required`; None leaves it to the server."""
    seed: int | None = None
    phase: Phase | None = None
    response_format: dict[str, Any] | None = None
    """OpenAI's structured-output setting (e.g. `{"type": "json_object"}`); None: unset."""

    def body(self) -> dict[str, Any]:
        """The JSON body sent to `/chat/completions` (unset parameters left out)."""
        body: dict[str, Any] = {"model": self.model, "messages": self.messages}
        optional = {
            "tools": self.tools or None,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "tool_choice": self.tool_choice,
            "seed": self.seed,
            "response_format": self.response_format,
        }
        return body | {key: value for key, value in optional.items() if value is not None}


@dataclass(frozen=True)
class PreparedCall:
    """One physical attempt, ready to be recorded (`called`, `blobs`) and then sent."""

    called: ModelCalled
    body: dict[str, Any]
    """The request body that `send` posts."""
    blobs: dict[str, bytes]
    """The request body as a blob, keyed by its hash (`called.request`)."""

    @property
    def content(self) -> bytes:
        """The request body as recorded, the bytes that are sent."""
        assert self.called.request is not None
        return self.blobs[self.called.request.sha256]

    @property
    def tool_names(self) -> frozenset[str]:
        """The tools the request declared (a call to any other is an unknown tool)."""
        return frozenset(t["function"]["name"] for t in self.body.get("tools", []))

    @classmethod
    def restore(cls, called: ModelCalled, request_blob: bytes) -> "PreparedCall":
        """The prepared call of a recorded `model.called`, from its request blob.

        For a caller that records the call in one step and sends it in the next.
        """
        if called.request is None or blob_ref(request_blob) != called.request:
            raise ValueError(f"the blob is not the request of call {called.call_id}")
        return cls(called, orjson.loads(request_blob), {called.request.sha256: request_blob})


def prepare_call(request: ModelRequest, attempt: int, provider: str) -> PreparedCall:
    """The prepared attempt number `attempt` (1, 2…) of `request` to `provider`."""
    body = request.body()
    data = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    ref = blob_ref(data)
    called = ModelCalled(
        call_id=f"{request.request_id}/{attempt}",
        request_id=request.request_id,
        attempt=attempt,
        model=request.model,
        provider=provider,
        phase=request.phase,
        messages=len(request.messages),
        request=ref,
        api="chat",
    )
    return PreparedCall(called, body, {ref.sha256: data})
