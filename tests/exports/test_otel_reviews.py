"""A campaign's reviews and inspections as traces: its `llm` reviewer's and inspector's
streams (hand-made, of the real payloads, beside a real campaign's log) are each a trace
whose root is `invoke_agent review` or `invoke_agent inspector`, the model calls its
`chat` spans, an inspector's tool use an `execute_tool` span under the answer that asked;
`export otel --campaign` sends them with the runs, and the live sink sends the same
spans."""

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from events import Event, EventStore
from events.ids import new_id, utcnow
from events.payloads import (
    InspectionConcluded,
    InspectionConfig,
    InspectionLooked,
    InspectionStarted,
    ModelCalled,
    ModelResponded,
    PaperDecided,
    Payload,
    ReviewConfig,
    ReviewForm,
    ReviewRequested,
    ReviewSubmitted,
)
from events.payloads.model import Usage
from labrxiv.cli import app
from projections.exports.otel_ids import call_span_id, run_span_id, trace_id_of
from projections.exports.otel_send import SpanSender
from projections.exports.otel_sink import OtelSink
from projections.exports.otel_spans import run_spans
from tests.exports.otel_campaign import Campaign, copy_log, llm_campaign
from tests.exports.otlp_receiver import OtlpReceiver

REVIEW = "review-p-otel"
INSPECTION = "inspect-i-otel"


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Campaign]:
    with llm_campaign(tmp_path_factory.mktemp("otel-reviews"), labs=1) as campaign:
        yield campaign


def call(stream: str, number: int) -> list[Payload]:
    """A model call of `stream` and its answer (the reviewer's or the inspector's)."""
    call_id = f"{stream}:{number}/1"
    usage = Usage(input_tokens=100 * number, output_tokens=10, cached_input_tokens=20)
    return [
        ModelCalled(call_id=call_id, request_id=f"{stream}:{number}", attempt=1,
                    model="judge-1", provider="127.0.0.1:9", messages=2, api="chat"),
        ModelResponded(call_id=call_id, model="judge-1", usage=usage, latency_s=0.5,
                       price=None, cost_usd=None, cost_known=False, finish_reason="stop"),
    ]  # fmt: skip


def stream_of(name: str, campaign: str, payloads: list[Payload]) -> list[Event]:
    start = utcnow()
    return [
        Event(id=new_id(), stream=name, version=n, occurred_at=start + timedelta(seconds=n),
              correlation_id=campaign, payload=p)
        for n, p in enumerate(payloads)
    ]  # fmt: skip


def review_and_inspection(campaign: str, run: str) -> tuple[list[Event], list[Event]]:
    config = ReviewConfig(reviewer="llm", model="judge-1")
    form = ReviewForm(summary="A prompt.", strengths=[], weaknesses=["small"], questions=[],
                      soundness=3, presentation=3, contribution=2, rating=5, confidence=3,
                      ethics_flag=False)  # fmt: skip
    submitted = ReviewSubmitted(paper_id="p-otel", reviewer="llm-0", kind="llm",
                                model="judge-1", form=form)  # fmt: skip
    review = stream_of(REVIEW, campaign, [
        ReviewRequested(paper_id="p-otel", run=run, version=1, config=config),
        *call(REVIEW, 1),
        submitted,
    ])  # fmt: skip
    review += stream_of(REVIEW, campaign, [
        PaperDecided(paper_id="p-otel", decision="reject", reason="5 < 6", run=run,
                     reviews=[review[-1].id], mean_rating=5.0),
    ])  # fmt: skip
    review[-1] = review[-1].model_copy(update={"version": len(review) - 1})
    inspection = stream_of(INSPECTION, campaign, [
        InspectionStarted(run=run, through_version=3, detectors_verdict="PASS",
                          config=InspectionConfig(model="judge-1")),
        *call(INSPECTION, 1),
        InspectionLooked(call_id="call_a", tool="steps", arguments={}, result="0: started"),
        InspectionLooked(call_id="call_b", tool="event", arguments={"id": "x"}, result="{}"),
        *call(INSPECTION, 2),
        InspectionConcluded(run=run, verdict="PASS", summary="Fine.", evidence=[],
                            model="judge-1"),
    ])  # fmt: skip
    return review, inspection


def test_reviews_and_inspections_are_traces_sent_by_export_and_sink(
    done: Campaign, tmp_path: Path
) -> None:
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'labrxiv.db'}")
    copy_log(done.system.store, store, 0, done.system.store.max_position())
    (run,) = done.runs
    review, inspection = review_and_inspection(done.campaign, run)
    store.append(review)
    store.append(inspection)

    spans = run_spans(store.read_stream(REVIEW))
    chat, root = spans
    assert root.parent_id is None and root.name == "invoke_agent review"
    assert root.span_id == run_span_id(REVIEW) and root.trace_id == trace_id_of(REVIEW)
    assert root.attributes["labrxiv.decision"] == "reject"
    assert root.attributes["labrxiv.run"] == run
    assert root.attributes["labrxiv.campaign"] == done.campaign
    ((name, at, scored),) = [(e.name, e.at, e.attributes) for e in root.events]
    assert name == "gen_ai.evaluation.result" and scored["gen_ai.evaluation.score.value"] == 5
    assert chat.name == "chat judge-1" and chat.parent_id == root.span_id
    assert chat.attributes["gen_ai.usage.input_tokens"] == 100

    spans = run_spans(store.read_stream(INSPECTION))
    first, steps, event, second, root = spans
    assert root.name == "invoke_agent inspector" and root.parent_id is None
    assert root.attributes["labrxiv.verdict"] == "PASS"
    assert root.attributes["gen_ai.request.model"] == "judge-1"
    assert [first.name, second.name] == ["chat judge-1", "chat judge-1"]
    assert {first.parent_id, second.parent_id} == {root.span_id}
    assert (steps.name, event.name) == ("execute_tool steps", "execute_tool event")
    assert steps.parent_id == event.parent_id == call_span_id(inspection[1].id)
    assert steps.start == steps.end == inspection[3].occurred_at

    with OtlpReceiver() as receiver:
        said = CliRunner().invoke(
            app,
            ["export", "otel", "--campaign", done.campaign, "--endpoint", receiver.url],
            env={"LABRXIV_DATA_DIR": str(tmp_path)},
        )
        assert said.exit_code == 0, said.output
        exported = {(s.trace_id, s.span_id, s.parent_id, s.name) for s in receiver.spans}
        traces = {s.trace_id for s in receiver.spans}
        assert {f"{trace_id_of(s):032x}" for s in (run, REVIEW, INSPECTION)} <= traces
        receiver.spans.clear()
        sender = SpanSender(receiver.url)
        try:
            OtelSink(store, sender).catch_up()
        finally:
            sender.close()
        live = {(s.trace_id, s.span_id, s.parent_id, s.name) for s in receiver.spans}
    assert live == exported and len(receiver.spans) == len(live)
