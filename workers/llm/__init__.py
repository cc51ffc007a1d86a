"""The LLM gateway: chat completions through any OpenAI-compatible endpoint, every attempt
written ahead, priced from a price table, and recorded as model events.

Modules: `request` (what is asked, prepared for the log), `gateway` (sending, retrying,
classifying), `reply` (the answer and its tool calls), `model_json` (their arguments as
models write them), `prices` (the price table and the
cost rule), `failures` (what went wrong and whether to retry), `scrub` (secrets out).
"""

from workers.llm.gateway import CallOutcome, Gateway, provider_of
from workers.llm.prices import PriceTable, PriceTableError, cost_usd
from workers.llm.reply import Reply, ToolCall
from workers.llm.request import ModelRequest, PreparedCall

__all__ = [
    "CallOutcome",
    "Gateway",
    "ModelRequest",
    "PreparedCall",
    "PriceTable",
    "PriceTableError",
    "Reply",
    "ToolCall",
    "cost_usd",
    "provider_of",
]
