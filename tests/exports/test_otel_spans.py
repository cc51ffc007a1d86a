"""Spans built from a real campaign's log: one trace a run, a `chat` span for each model
call of the ledger with its tokens, an `execute_tool` span for each tool call, each
model call's parent the run's span and each tool call's the `chat` span of the answer
that asked for it, the grader's scores as evaluation events; the same ids
whenever they are built; a call or a run not finished is not sent until it is."""

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from events import Event
from events.payloads import ModelCalled, ModelResponded, RunFinished, ToolInvoked
from projections.exports.otel_ids import trace_id_of
from projections.exports.otel_runs import reviews_and_inspections
from projections.exports.otel_span import Span
from projections.exports.otel_spans import CLOSING_TYPES, UNKNOWN_OUTCOME, run_spans
from projections.ledger import ledger_calls
from tests.exports.otel_campaign import Campaign, llm_campaign


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Campaign]:
    with llm_campaign(tmp_path_factory.mktemp("otel-spans")) as campaign:
        yield campaign


def _calls(campaign: Campaign, run: str) -> list[dict[str, Any]]:
    with campaign.system.store.engine.connect() as conn:
        return ledger_calls(conn, run=run)


def _by(spans: list[Span], key: str) -> dict[Any, Span]:
    return {span.attributes[key]: span for span in spans if key in span.attributes}


@pytest.mark.slow
def test_each_run_is_one_trace_under_its_invoke_agent_span(done: Campaign) -> None:
    assert len(done.runs) == 2
    traces = set()
    for run in done.runs:
        events = done.system.store.read_stream(run)
        spans = run_spans(events)
        (root,) = [s for s in spans if s.parent_id is None]
        lab = events[0].payload.lab  # type: ignore[union-attr]
        assert root.name == f"invoke_agent {lab}"
        assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert root.attributes["gen_ai.agent.name"] == lab
        assert root.attributes["gen_ai.conversation.id"] == run
        assert root.attributes["labrxiv.campaign"] == done.campaign
        assert root.start == events[0].occurred_at and root.end == events[-1].occurred_at
        assert root.closed_at == events[-1].position, "sent when the run finishes"
        assert {s.trace_id for s in spans} == {trace_id_of(run)}
        assert all(s.parent_id == root.span_id for s in spans if s.kind == "client")
        assert len({s.span_id for s in spans}) == len(spans)
        chats = _by([s for s in spans if s.kind == "client"], "labrxiv.call_id")
        tools = _by([s for s in spans if s.kind == "internal"], "gen_ai.tool.call.id")
        answered = None  # an `llm` lab's tool calls follow the answer that asked for them
        for event in events:
            if isinstance(event.payload, ModelResponded):
                answered = event.payload.call_id
            elif isinstance(event.payload, ToolInvoked):
                assert answered is not None
                span = tools[event.payload.call_id]
                assert span.parent_id == chats[answered].span_id, event.payload.call_id
        assert tools
        traces.add(root.trace_id)
    assert len(traces) == len(done.runs)


@pytest.mark.slow
def test_model_spans_carry_the_ledgers_tokens_and_outcomes(done: Campaign) -> None:
    failed = 0
    for run in done.runs:
        events = done.system.store.read_stream(run)
        chats = _by([s for s in run_spans(events) if s.kind == "client"], "labrxiv.call_id")
        rows = {c["call_id"]: c for c in _calls(done, run) if c["kind"] == "model"}
        assert chats.keys() == rows.keys() and rows
        called = {e.payload.call_id: e for e in events if isinstance(e.payload, ModelCalled)}
        for call_id, row in rows.items():
            span = chats[call_id]
            assert span.name == f"chat {called[call_id].payload.model}"  # type: ignore[union-attr]
            assert span.attributes["gen_ai.request.model"] == called[call_id].payload.model  # type: ignore[union-attr]
            assert span.attributes["gen_ai.provider.name"] == row["provider"]
            assert span.start == called[call_id].occurred_at <= span.end
            if row["status"] == "failed":
                failed += 1
                assert span.error is not None and span.attributes["error.type"] == row["error"]
                assert "gen_ai.usage.input_tokens" not in span.attributes
                continue
            assert span.error is None
            assert span.attributes["gen_ai.response.model"] == row["model"]
            assert span.attributes["gen_ai.usage.input_tokens"] == row["input_tokens"]
            assert span.attributes["gen_ai.usage.output_tokens"] == row["output_tokens"]
            cached = span.attributes["gen_ai.usage.cache_read.input_tokens"]
            reasoning = span.attributes["gen_ai.usage.reasoning.output_tokens"]
            assert cached == row["cached_input_tokens"] > 0
            assert reasoning == row["reasoning_tokens"] > 0
            assert span.attributes["labrxiv.cost_usd"] == pytest.approx(row["cost_usd"])
            reasons = span.attributes["gen_ai.response.finish_reasons"]
            assert list(reasons) and all(isinstance(r, str) for r in reasons)  # type: ignore[union-attr]
    assert failed == 1, "the one server error is a failed chat span"


@pytest.mark.slow
def test_tool_spans_and_evaluations_are_the_ledgers(done: Campaign) -> None:
    for run in done.runs:
        spans = run_spans(done.system.store.read_stream(run))
        tools = _by([s for s in spans if s.kind == "internal"], "gen_ai.tool.call.id")
        calls = _calls(done, run)
        rows = {c["call_id"]: c for c in calls if c["kind"] == "tool"}
        assert tools.keys() == rows.keys() and rows
        for call_id, row in rows.items():
            span = tools[call_id]
            assert span.name == f"execute_tool {row['tool']}"
            assert span.attributes["gen_ai.tool.name"] == row["tool"]
            assert (span.end - span.start).total_seconds() == pytest.approx(row["duration_s"])
            assert (span.error is None) == (row["exit_code"] == 0)
        assert any(row["exit_code"] != 0 for row in rows.values()), "a failed tool is an error"
        (root,) = [s for s in spans if s.parent_id is None]
        graded = [c for c in calls if c["kind"] == "grader"]
        evaluations = [e for e in root.events if e.name == "gen_ai.evaluation.result"]
        assert len(evaluations) == len(graded) >= 1
        for event, row in zip(evaluations, graded, strict=True):
            assert event.attributes["labrxiv.grader_usage.input_tokens"] == row["input_tokens"]
            assert isinstance(event.attributes["gen_ai.evaluation.score.value"], float)


@pytest.mark.slow
def test_the_same_log_gives_the_same_ids(done: Campaign) -> None:
    run = done.runs[0]
    first = run_spans(done.system.store.read_stream(run))
    again = run_spans(done.system.store.read_stream(run))
    assert [(s.trace_id, s.span_id, s.parent_id) for s in first] == [
        (s.trace_id, s.span_id, s.parent_id) for s in again
    ]
    other = run_spans(done.system.store.read_stream(done.runs[1]))
    assert not {s.span_id for s in first} & {s.span_id for s in other}


@pytest.mark.slow
def test_what_has_not_finished_is_not_built_and_a_finished_run_closes_open_calls(
    done: Campaign,
) -> None:
    events = done.system.store.read_stream(done.runs[0])
    cut = next(i for i, e in enumerate(events) if isinstance(e.payload, ModelCalled) and i > 5)
    head = events[: cut + 1]  # the stream as it stood with a model call under way
    spans = run_spans(head)
    assert not [s for s in spans if s.parent_id is None], "the run's span waits for its end"
    open_call = head[-1].payload
    assert isinstance(open_call, ModelCalled)
    assert open_call.call_id not in {s.attributes.get("labrxiv.call_id") for s in spans}
    assert len(spans) == len(run_spans(events[:cut])), "the open call adds no span"
    ended = Event(
        id=uuid.uuid4(),
        stream=head[-1].stream,
        version=head[-1].version + 1,
        occurred_at=head[-1].occurred_at,
        position=(head[-1].position or 0) + 1,
        payload=RunFinished(reason="error", detail="worker died"),
    )
    closed = run_spans([*head, ended])
    (unknown,) = [s for s in closed if s.attributes.get("labrxiv.call_id") == open_call.call_id]
    assert unknown.error == UNKNOWN_OUTCOME and unknown.closed_at == ended.position
    (root,) = [s for s in closed if s.parent_id is None]
    assert root.error == "worker died"


def test_a_stream_that_is_no_run_is_refused() -> None:
    stray = Event(
        id=uuid.uuid4(),
        stream="run-x",
        version=0,
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        position=1,
        payload=RunFinished(reason="done"),
    )
    with pytest.raises(ValueError, match="does not begin with run.started"):
        run_spans([stray])


@pytest.mark.slow
def test_the_sinks_closing_types_are_the_events_that_complete_spans(done: Campaign) -> None:
    """The live sink looks for `CLOSING_TYPES` in a page: each span of the campaign's runs
    is completed by an event of one of them, and each of them completes some span, but
    for the ends of reviews and inspections, which the campaign has none of
    (tests/exports/test_otel_reviews.py has them)."""
    store = done.system.store
    closers = set()
    with store.engine.connect() as conn:
        assert reviews_and_inspections(conn, done.campaign) == []
    for run in done.runs:
        by_position = {e.position: e.type for e in store.read_stream(run)}
        closers |= {by_position[s.closed_at] for s in run_spans(store.read_stream(run))}
    others = {"paper.decided", "review.stopped"}
    others |= {t for t in CLOSING_TYPES if t.startswith("inspection.")}
    assert closers == CLOSING_TYPES - others
