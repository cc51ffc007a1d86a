"""Runs of `llm` labs as the log holds them, for the benches that replay a log: every
model call answered (tokens, a price, dollars) and asking for a tool, whose result the
next call reads; an evaluation graded now and then; the run's end."""

from datetime import datetime, timedelta

from events import Event
from events.ids import new_id
from events.payloads import (
    ExperimentScored,
    LlmConfig,
    ModelCalled,
    ModelResponded,
    Payload,
    PhaseEntered,
    Price,
    RunFinished,
    RunStarted,
    ToolInvoked,
    ToolReturned,
    Usage,
)
from events.streams import run_stream

MODEL = "gpt-4o-mini"
PRICE = Price(input_per_mtok=0.15, cached_input_per_mtok=0.075, output_per_mtok=0.6, source="bench")
CALLS = 8
"""Model calls a run: with its start, two phases, two scores and its end, 38 events."""


def llm_run(run_id: str, start: datetime, campaign: str = "bench") -> list[Event]:
    """One finished `llm` run of `CALLS` model calls, each answered with a tool call, and
    an evaluation (`evaluate`, its result and the grader's score) after every third."""
    config = LlmConfig(model=MODEL, context_tokens=32_000)
    payloads: list[Payload] = [
        RunStarted(task="continual-digits", lab="lab-0", policy="llm", llm=config),
        PhaseEntered(phase="plan"),
        PhaseEntered(phase="experiment"),
    ]
    attempt = 0
    for index in range(1, CALLS + 1):
        call = f"{run_id}:{index}/1"
        usage = Usage(input_tokens=2000 + 300 * index, cached_input_tokens=1500, output_tokens=80)
        dollars = (500 + 300 * index) * 0.15e-6 + 1500 * 0.075e-6 + 80 * 0.6e-6
        tool = "evaluate" if index % 3 == 0 else "read_file"
        payloads += [
            ModelCalled(
                call_id=call, request_id=f"{run_id}:{index}", attempt=1, model=MODEL,
                provider="bench", phase="experiment", messages=2 + 2 * index,
            ),
            ModelResponded(
                call_id=call, model=MODEL, usage=usage, latency_s=0.5, price=PRICE,
                cost_usd=dollars, cost_known=True, tool_calls=1, preview="Trying the next one.",
            ),
            ToolInvoked(call_id=f"tool-{index}", tool=tool, args={"path": "config.json"}),
            ToolReturned(
                call_id=f"tool-{index}", tool=tool, exit_code=0, duration_s=0.2,
                preview="x" * 600,
            ),
        ]  # fmt: skip
        if tool == "evaluate":
            attempt += 1
            value = 0.5 + 0.1 * attempt
            payloads.append(
                ExperimentScored(
                    attempt=attempt, subtask_scores={"final_accuracy": value}, score=value,
                    normalized_score=value,
                )
            )  # fmt: skip
    payloads.append(RunFinished(reason="done"))
    stream = run_stream(run_id)
    return [
        Event(
            id=new_id(), stream=stream, version=version, correlation_id=campaign,
            occurred_at=start + timedelta(seconds=version), actor="lab-0", payload=payload,
        )
        for version, payload in enumerate(payloads)
    ]  # fmt: skip


def llm_events(count: int, prefix: str, start: datetime) -> list[Event]:
    """`count` events of `llm` runs (38 events a run), in publish order."""
    events: list[Event] = []
    index = 0
    while len(events) < count:
        events.extend(llm_run(f"{prefix}{index}", start))
        index += 1
    return events[:count]
