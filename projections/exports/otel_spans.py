"""A run's events as OpenTelemetry spans, named and attributed by the GenAI semantic
conventions: pure, so the command over past runs and the live sink send the same spans.
A paper's review stream and an LLM inspection's stream are traces too
(`otel_streams`: their roots and tool calls).

One trace a run. Its root is the run's `invoke_agent {lab}` span, from `run.started` to
`run.finished`; every event of the run stream follows, by its causation, from the run's
`run.started`, so each model call's span is a child of the run's, and so is each tool
call's, unless a model call of the run asked for it (its id says so,
`projections.exports.otel_parents`): then it is a child of that call's `chat` span:
- a model call (a physical attempt, keyed by `call_id` as the ledger keys it,
  `projections.ledger`) is a `chat {model}` span of kind CLIENT from its `model.called`
  to its `model.responded` or `model.failed` (a failure is an error status), its tokens
  counted by `events.spend` (cached and reasoning tokens are part of input and output);
  a call written ahead before the run was stopped (`run.interrupted`) and sent by the
  step that resumed it spans its measured latency before its outcome, not the stop;
- a tool call is an `execute_tool {tool}` span from its `tool.invoked`, lasting the
  `duration_s` its `tool.returned` measured; a non-zero exit code is an error status;
- a grader's score (`experiment.scored`) is a `gen_ai.evaluation.result` event of the
  run's span (it follows the `evaluate` call's return in the log, so it is the run's).

A call whose outcome never came is closed by `run.finished` as an error ("outcome
unknown"); until then, and a run until it finishes, a span is not complete and is not
built. No message, argument or output is sent: content is opt-in in the conventions.
"""

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Literal

from events.payloads import (
    ExperimentScored,
    InspectionLooked,
    ModelCalled,
    ModelFailed,
    ModelResponded,
    ReviewSubmitted,
    RunFinished,
    RunInterrupted,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from events.recorded import Fact
from projections.exports.otel_attributes import (
    call_attributes,
    evaluation_event,
    outcome_attributes,
    run_attributes,
)
from projections.exports.otel_ids import call_span_id, run_span_id, trace_id_of
from projections.exports.otel_parents import asked_by, asking_names
from projections.exports.otel_span import Attribute, Span, SpanEvent
from projections.exports.otel_streams import (
    ENDS,
    End,
    Root,
    agent_span,
    looked_span,
    opening,
    review_event,
    root_span,
    stored_position,
)

UNKNOWN_OUTCOME = "outcome unknown: the run finished with the call open"

CLOSERS = (ModelResponded, ModelFailed, ToolReturned, InspectionLooked, RunFinished, *ENDS)
"""The payloads that complete spans of their stream (`run_spans` closes spans at these
and only these)."""

CLOSING_TYPES = frozenset(closer.model_fields["type"].default for closer in CLOSERS)
"""The event types of `CLOSERS`: the events the live sink looks for in a page."""


def run_spans(events: Iterable[Fact]) -> list[Span]:
    """The complete spans of the run (or review, or inspection: `otel_streams`) whose
    stream is `events` (version order, stored: each with its position), in the order
    they completed."""
    return RunFold().feed(events)


class RunFold:
    """`run_spans` over a stream read in parts: `feed` the events after `version` and
    get the spans they complete. Its state (the run, its open calls, its scores so far)
    is that of the stream up to `version`, so a copy can go on from there later."""

    def __init__(self) -> None:
        self.version = -1
        """The last version fed (-1: none)."""
        self.finished = False
        """Whether the stream's end was fed (`run.finished`, a review's decision, an
        inspection's end): it completes no span after it."""
        self._run: Root | None = None
        self._opened: dict[str, tuple[Fact, ModelCalled | ToolInvoked]] = {}
        self._scores: list[SpanEvent] = []
        self._chats: dict[str, int] = {}
        """The `chat` span of each model call so far, by each name a tool call's id may
        give it (`otel_parents.asking_names`); the latest call of a name wins."""
        self._answered: int | None = None
        """The `chat` span of the stream's last answered model call."""
        self._stood: set[str] = set()
        """The open calls (keys of `_opened`) the run was stopped with: their outcomes
        came after the stop, so their time open is not theirs."""

    def copy(self) -> "RunFold":
        """Another fold at the same point, that feeding leaves this one alone."""
        other = RunFold()
        other.version, other.finished, other._run = self.version, self.finished, self._run
        other._opened = dict(self._opened)
        other._scores = list(self._scores)
        other._chats = dict(self._chats)
        other._answered = self._answered
        other._stood = set(self._stood)
        return other

    def feed(self, events: Iterable[Fact]) -> list[Span]:
        """The spans `events` (the stream's next ones, in version order) complete."""
        spans: list[Span] = []
        for event in events:
            self._take(event, spans)
            self.version = event.version
        return spans

    def _take(self, event: Fact, spans: list[Span]) -> None:
        payload = event.payload
        run = self._run
        if run is None:
            ids = trace_id_of(event.stream), run_span_id(event.stream)
            run = self._run = opening(event, *ids)
            if isinstance(payload, RunStarted):
                return
        if isinstance(payload, ModelCalled):
            self._opened[f"model:{payload.call_id}"] = (event, payload)
            self._chats |= dict.fromkeys(asking_names(payload), call_span_id(event.id))
        elif isinstance(payload, ToolInvoked):
            self._opened[f"tool:{payload.call_id}"] = (event, payload)
        elif isinstance(payload, RunInterrupted):
            self._stood |= self._opened.keys()
        elif isinstance(payload, ExperimentScored):
            self._scores.append(evaluation_event(payload, event.occurred_at))
        elif isinstance(payload, ReviewSubmitted):
            self._scores.append(review_event(payload, event.occurred_at))
        elif isinstance(payload, InspectionLooked):
            parent = run.span_id if self._answered is None else self._answered
            spans.append(looked_span(run, event, payload, parent))
        elif isinstance(payload, CLOSERS):
            if isinstance(payload, ModelResponded) and f"model:{payload.call_id}" in self._opened:
                self._answered = call_span_id(self._opened[f"model:{payload.call_id}"][0].id)
            spans.extend(
                _closed(
                    run, self._opened, self._chats, tuple(self._scores), event, payload, self._stood
                )
            )
            self._stood &= self._opened.keys()
            self.finished = self.finished or isinstance(payload, (RunFinished, *ENDS))


def _closed(
    run: Root,
    opened: dict[str, tuple[Fact, ModelCalled | ToolInvoked]],
    chats: dict[str, int],
    scores: tuple[SpanEvent, ...],
    event: Fact,
    payload: ModelResponded | ModelFailed | ToolReturned | InspectionLooked | RunFinished | End,
    stood: set[str],
) -> list[Span]:
    """The spans `event` (one of `CLOSERS`) completes; the calls it closes leave `opened`
    (`stood`: the open calls the run was stopped with)."""
    if isinstance(payload, (RunFinished, *ENDS)):
        spans = [
            _unfinished(run, opener, asked, event, _parent(run, chats, asked))
            for opener, asked in opened.values()
        ]
        opened.clear()
        if isinstance(payload, RunFinished):
            return [*spans, _run_span(run, event, payload, scores)]
        return [*spans, root_span(run, event, payload, scores)]
    if isinstance(payload, ToolReturned):
        invoked = opened.pop(f"tool:{payload.call_id}", None)
        if invoked is not None and isinstance(invoked[1], ToolInvoked):
            parent = _parent(run, chats, invoked[1])
            return [_tool_span(run, invoked[0], invoked[1], event, parent)]
        return []
    if isinstance(payload, InspectionLooked):  # complete as it comes: `looked_span`
        return []
    key = f"model:{payload.call_id}"
    called = opened.pop(key, None)
    if called is not None and isinstance(called[1], ModelCalled):
        return [_model_span(run, called[0], called[1], event, key in stood)]
    return []


def _parent(run: Root, chats: dict[str, int], asked: ModelCalled | ToolInvoked) -> int:
    """The span a call's span is a child of: a tool call's, the `chat` span of the model
    call that asked for it when its id names one; else the run's."""
    if isinstance(asked, ToolInvoked):
        named = asked_by(asked.call_id)
        if named is not None and named in chats:
            return chats[named]
    return run.span_id


def _run_span(run: Root, last: Fact, finished: RunFinished, scores: tuple[SpanEvent, ...]) -> Span:
    started = run.started
    assert isinstance(started, RunStarted)
    attributes = run_attributes(started, run.stream, run.campaign, finished)
    failed = finished.reason == "error"
    error = (finished.detail or "the run ended with an error") if failed else None
    return agent_span(run, started.lab, last, attributes, scores, error)


def _model_span(
    run: Root, opener: Fact, called: ModelCalled, outcome: Fact, stood: bool = False
) -> Span:
    """A model call's span. Its end is the outcome's time; its start the call's, unless a
    producer stamped the call after its outcome (a step's events written at its end), or
    the run was stopped between them (`stood`: the call was sent by the step that resumed
    the run): then the outcome's time less the latency the call measured."""
    answer = outcome.payload
    assert isinstance(answer, ModelResponded | ModelFailed)
    end = outcome.occurred_at
    start = opener.occurred_at
    if start > end or stood:
        start = end - timedelta(seconds=answer.latency_s)
    attributes = call_attributes(run.stream, called) | outcome_attributes(answer)
    error = None
    if isinstance(answer, ModelFailed):
        error = f"{answer.error}: {answer.detail}" if answer.detail else answer.error
    name = f"chat {called.model}"
    window = (start, end)
    return _call_span(run, opener, name, "client", window, outcome, attributes, error, run.span_id)


def _tool_span(run: Root, opener: Fact, invoked: ToolInvoked, outcome: Fact, parent: int) -> Span:
    returned = outcome.payload
    assert isinstance(returned, ToolReturned)
    start = opener.occurred_at
    end = start + timedelta(seconds=returned.duration_s)
    attributes = call_attributes(run.stream, invoked)
    attributes["labrxiv.exit_code"] = returned.exit_code
    error = None
    if returned.exit_code != 0:
        why = f"limit {returned.limit}" if returned.limit else f"exit code {returned.exit_code}"
        attributes["error.type"] = why
        error = why
    name = f"execute_tool {invoked.tool}"
    window = (start, end)
    return _call_span(run, opener, name, "internal", window, outcome, attributes, error, parent)


def _unfinished(
    run: Root, opener: Fact, asked: ModelCalled | ToolInvoked, finished: Fact, parent: int
) -> Span:
    """A call the run finished with open: an error from its start to the run's end."""
    attributes = call_attributes(run.stream, asked)
    attributes["error.type"] = "unknown_outcome"
    kind: Literal["internal", "client"] = "internal"
    if isinstance(asked, ModelCalled):
        name, kind = f"chat {asked.model}", "client"
    else:
        name = f"execute_tool {asked.tool}"
    window = (opener.occurred_at, max(opener.occurred_at, finished.occurred_at))
    error = UNKNOWN_OUTCOME
    return _call_span(run, opener, name, kind, window, finished, attributes, error, parent)


def _call_span(
    run: Root,
    opener: Fact,
    name: str,
    kind: Literal["internal", "client"],
    window: tuple[datetime, datetime],
    closer: Fact,
    attributes: dict[str, Attribute],
    error: str | None,
    parent: int,
) -> Span:
    return Span(
        name=name,
        kind=kind,
        trace_id=run.trace_id,
        span_id=call_span_id(opener.id),
        parent_id=parent,
        start=window[0],
        end=window[1],
        attributes=attributes,
        closed_at=stored_position(closer),
        error=error,
    )
