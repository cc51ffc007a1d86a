"""The traces of the streams that are not runs but call models: a paper's review stream
(`review-<paper>`, docs/review.md) and an LLM inspection's (`inspect-<id>`,
docs/analysis.md). Their model calls are `chat` spans as a run's are
(`otel_spans`); what differs is their root and, for an inspection, its tool calls:

- a review's root is `invoke_agent review`, from the stream's first event to its end
  (`paper.decided`, or `review.stopped`: an error status), each `review.submitted` a
  `gen_ai.evaluation.result` event of it (the reviewer and its rating);
- an inspection's root is `invoke_agent inspector`, from `inspection.started` to its
  end (`inspection.concluded`; `inspection.failed` or `inspection.stopped`: an error
  status); each `inspection.looked` (the inspector reading the trajectory with a tool)
  is an `execute_tool {tool}` span of no length at its time (the log keeps no
  duration), a child of the `chat` span of the answer before it, the one that asked.
"""

from dataclasses import dataclass
from datetime import datetime

from events.payloads import (
    InspectionConcluded,
    InspectionFailed,
    InspectionLooked,
    InspectionStarted,
    InspectionStopped,
    PaperDecided,
    Payload,
    ReviewRequested,
    ReviewStopped,
    ReviewSubmitted,
    RunStarted,
)
from events.recorded import Fact
from events.streams import stream_id, stream_kind
from projections.exports.otel_ids import call_span_id
from projections.exports.otel_span import Attribute, Span, SpanEvent

TRACED = ("run", "review", "inspect")
"""The stream kinds that are traces."""

ENDS = (PaperDecided, ReviewStopped, InspectionConcluded, InspectionFailed, InspectionStopped)
"""The payloads that end a review or an inspection: its root span is complete."""

End = PaperDecided | ReviewStopped | InspectionConcluded | InspectionFailed | InspectionStopped


@dataclass(frozen=True)
class Root:
    """What every span of a stream's trace shares."""

    stream: str
    trace_id: int
    span_id: int
    started: Payload
    """The stream's first payload (a run's `run.started`)."""
    started_at: datetime
    campaign: str | None


def opening(event: Fact, trace_id: int, span_id: int) -> Root:
    """The root of the trace that `event`, its stream's first, opens; `ValueError` for a
    stream that is no trace (a run's that does not begin with `run.started`)."""
    kind = stream_kind(event.stream)
    if kind not in TRACED:
        raise ValueError(f"{event.stream} is not a run, review or inspection stream")
    if kind == "run" and not isinstance(event.payload, RunStarted):
        raise ValueError(f"{event.stream} does not begin with run.started")
    at = event.occurred_at
    return Root(event.stream, trace_id, span_id, event.payload, at, event.correlation_id)


def review_event(submitted: ReviewSubmitted, at: datetime) -> SpanEvent:
    """A reviewer's review as the conventions' evaluation event."""
    attributes: dict[str, Attribute] = {
        "gen_ai.evaluation.name": submitted.reviewer,
        "gen_ai.evaluation.score.value": submitted.form.rating,
        "gen_ai.evaluation.explanation": submitted.form.summary[:500],
        "labrxiv.review_kind": submitted.kind,
    }
    if submitted.model is not None:
        attributes["gen_ai.request.model"] = submitted.model
    return SpanEvent("gen_ai.evaluation.result", at, attributes)


def looked_span(root: Root, event: Fact, looked: InspectionLooked, parent: int) -> Span:
    """The inspector's tool call `looked` (the event `event`) as a span of no length."""
    attributes: dict[str, Attribute] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": looked.tool,
        "gen_ai.tool.call.id": looked.call_id,
        "gen_ai.tool.type": "function",
        "gen_ai.conversation.id": root.stream,
    }
    return Span(
        name=f"execute_tool {looked.tool}",
        kind="internal",
        trace_id=root.trace_id,
        span_id=call_span_id(event.id),
        parent_id=parent,
        start=event.occurred_at,
        end=event.occurred_at,
        attributes=attributes,
        closed_at=stored_position(event),
    )


def root_span(root: Root, last: Fact, end: End, events: tuple[SpanEvent, ...]) -> Span:
    """A review's or an inspection's own span, completed by `end` (the event `last`)."""
    agent = "review" if isinstance(end, PaperDecided | ReviewStopped) else "inspector"
    attributes: dict[str, Attribute] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": root.stream,
        "gen_ai.agent.name": agent,
        "gen_ai.conversation.id": root.stream,
    }
    if root.campaign is not None:
        attributes["labrxiv.campaign"] = root.campaign
    started = root.started
    if isinstance(started, ReviewRequested):
        attributes["labrxiv.run"] = started.run
    elif isinstance(started, InspectionStarted):
        attributes["gen_ai.request.model"] = started.config.model
    error = None
    if isinstance(end, PaperDecided):
        attributes |= {"labrxiv.paper": end.paper_id, "labrxiv.decision": end.decision}
        attributes["labrxiv.mean_rating"] = end.mean_rating
        if end.run is not None:
            attributes["labrxiv.run"] = end.run
    elif isinstance(end, ReviewStopped):
        attributes["labrxiv.paper"] = end.paper_id
        error = end.reason
    else:
        attributes["labrxiv.run"] = end.run
        attributes["labrxiv.inspection"] = stream_id(root.stream)
        if isinstance(end, InspectionConcluded):
            attributes["labrxiv.verdict"] = end.verdict
        else:
            error = end.reason
    if error is not None:
        attributes["error.type"] = end.type
    return agent_span(root, agent, last, attributes, events, error)


def agent_span(
    root: Root,
    agent: str,
    last: Fact,
    attributes: dict[str, Attribute],
    events: tuple[SpanEvent, ...],
    error: str | None,
) -> Span:
    """The root span of a trace, `invoke_agent {agent}`, from the stream's first event to
    `last`, the event that completes it."""
    return Span(
        name=f"invoke_agent {agent}",
        kind="internal",
        trace_id=root.trace_id,
        span_id=root.span_id,
        parent_id=None,
        start=root.started_at,
        end=max(root.started_at, last.occurred_at),
        attributes=attributes,
        closed_at=stored_position(last),
        events=events,
        error=error,
    )


def stored_position(event: Fact) -> int:
    """The log position of `event`, which a span closes at; `ValueError` for an event that
    is not stored."""
    if event.position is None:
        raise ValueError(f"event {event.id} is not stored: spans are built from the log")
    return event.position
