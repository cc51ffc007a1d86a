"""Model events: every physical call to a language model, written ahead of the call.

A call is `model.called` (recorded before the request is sent), then exactly one of
`model.responded` or `model.failed`. A `model.called` with neither is a call of
unknown outcome (the worker died mid-call): the ledger still counts it.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from events.blobs import BlobRef
from events.payloads.base import Payload

Phase = Literal["literature", "plan", "experiment", "writeup", "revise"]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Usage(_Strict):
    """Tokens as the provider reported them (OpenAI `usage`); cached ⊂ input, reasoning ⊂ output."""

    input_tokens: int = Field(ge=0)
    """`prompt_tokens`."""
    cached_input_tokens: int = Field(default=0, ge=0)
    """`prompt_tokens_details.cached_tokens` (part of input_tokens)."""
    cache_creation_input_tokens: int = Field(default=0, ge=0)
    """Input tokens written to the provider's prompt cache (Anthropic's
    `cache_creation_input_tokens`; part of input_tokens, priced as input)."""
    output_tokens: int = Field(ge=0)
    """`completion_tokens`."""
    reasoning_tokens: int = Field(default=0, ge=0)
    """`completion_tokens_details.reasoning_tokens` (part of output_tokens)."""


class Price(_Strict):
    """Dollars per million tokens, frozen into the event from the price table used."""

    input_per_mtok: float = Field(ge=0, allow_inf_nan=False)
    cached_input_per_mtok: float = Field(ge=0, allow_inf_nan=False)
    output_per_mtok: float = Field(ge=0, allow_inf_nan=False)
    source: str
    """Which price table and entry (e.g. `builtin:gpt-4o-mini` or a user file)."""


class ModelCalled(Payload):
    """A request is about to be sent to a model (one physical attempt)."""

    type: Literal["model.called"] = "model.called"
    call_id: str
    """Unique per physical attempt; pairs with the outcome event."""
    request_id: str
    """The logical request; retries of it share this id."""
    attempt: int = Field(ge=1)
    """1 for the first try, 2 for the first retry…"""
    model: str
    provider: str
    """The endpoint's host (never a key), e.g. `api.openai.com` or `127.0.0.1:8000`."""
    phase: Phase | None = None
    messages: int = Field(ge=0)
    """How many messages the request carries."""
    request: BlobRef | None = None
    """The full request body (messages, tools, parameters) in the blob table."""
    api: Literal["chat", "responses", "messages"] | None = None
    """The API the request was sent to: OpenAI's Chat Completions or Responses, or
    Anthropic's Messages; None in logs written before labrxiv recorded it (readers then
    tell it from the request's shape, `runstate.answers.request_api`)."""


class ModelResponded(Payload):
    """The model answered."""

    type: Literal["model.responded"] = "model.responded"
    call_id: str
    model: str
    """The model the provider says answered."""
    usage: Usage | None
    """None when the provider reported no usage (counted apart, never guessed)."""
    latency_s: float = Field(ge=0)
    price: Price | None
    """The price used, or None when the model has no price (cost unknown)."""
    cost_usd: float | None
    """Cost at `price`; None when unknown, never a silent 0."""
    cost_known: bool
    finish_reason: str | None = None
    tool_calls: int = Field(default=0, ge=0)
    preview: str = Field(default="", max_length=4000)
    """The start of the answer's text."""
    response: BlobRef | None = None
    """The full response body in the blob table."""


class ModelFailed(Payload):
    """The call failed (one physical attempt); `will_retry` says whether another follows."""

    type: Literal["model.failed"] = "model.failed"
    call_id: str
    error: Literal[
        "rate_limited", "server_error", "timeout", "connection", "bad_request", "auth", "other"
    ]
    status_code: int | None = None
    retry_after_s: float | None = None
    """What the provider asked for (`retry-after`), if anything."""
    latency_s: float = Field(ge=0)
    detail: str = Field(default="", max_length=2000)
    """The error message, with any secret removed."""
    will_retry: bool


class PhaseEntered(Payload):
    """An LLM lab moved to another phase of its research cycle."""

    type: Literal["phase.entered"] = "phase.entered"
    phase: Phase
    note: str = Field(default="", max_length=20_000)
    """What the lab is told on entering, beyond the phase's instructions (the `revise`
    phase: the reviews it answers)."""


class ContextTruncated(Payload):
    """The conversation would not fit the model's context; a rule shortened it."""

    type: Literal["context.truncated"] = "context.truncated"
    rule: Literal["drop_oldest", "summary"]
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    dropped_messages: int = Field(ge=0)
