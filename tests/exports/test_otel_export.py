"""`labrxiv export otel` and the projector's live sink, against an OTLP/HTTP receiver
that decodes what arrives with `opentelemetry-proto`: the spans the log gives, sent with
their ids, parents and attributes; each span sent once by the sink across a restart and
an endpoint that refused a page; bad input told in one line."""

import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from events import EventStore
from labrxiv.cli import app
from labrxiv.projecting import follow
from projections.exports.otel_runs import run_traces
from projections.exports.otel_send import ExportFailed, SpanSender
from projections.exports.otel_sink import OtelSink
from projections.exports.otel_span import Span
from projections.runner import ProjectionRunner
from projections.runs import RunsProjector, runs_of
from tests.exports.otel_campaign import Campaign, copy_log, cut_inside_a_call, llm_campaign
from tests.exports.otlp_receiver import OtlpReceiver


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Campaign]:
    with llm_campaign(tmp_path_factory.mktemp("otel-export")) as campaign:
        yield campaign


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def labrxiv(data_dir: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"LABRXIV_DATA_DIR": str(data_dir)})
    return result.exit_code, " ".join(result.output.split())


def expected(done: Campaign) -> list[Span]:
    return [s for t in run_traces(done.system.store, done.runs) for s in t.spans]


@pytest.mark.slow
def test_export_sends_each_runs_trace_as_built(done: Campaign, receiver: OtlpReceiver) -> None:
    code, said = labrxiv(
        done.data_dir, "export", "otel", "--campaign", done.campaign, "--endpoint", receiver.url
    )
    assert code == 0, said
    built = {f"{s.span_id:016x}": s for s in expected(done)}
    got = {r.span_id: r for r in receiver.spans}
    assert got.keys() == built.keys() and len(receiver.spans) == len(built)
    for span_id, span in built.items():
        sent = got[span_id]
        assert sent.name == span.name and sent.trace_id == f"{span.trace_id:032x}"
        assert sent.parent_id == ("" if span.parent_id is None else f"{span.parent_id:016x}")
        assert sent.attributes == {
            k: list(v) if isinstance(v, tuple) else v for k, v in span.attributes.items()
        }
        assert sent.status_code == (2 if span.error else 1)  # ERROR, OK
        assert [name for name, _ in sent.events] == [e.name for e in span.events]
        assert sent.resource["service.name"] == "labrxiv"
    for run in done.runs:
        assert run in said
    one = ["--run", done.runs[0], "--endpoint", receiver.url]
    code, _ = labrxiv(done.data_dir, "export", "otel", *one)
    assert code == 0
    again = receiver.spans[len(built) :]
    assert again and {r.span_id for r in again} <= built.keys(), "sent again: the same ids"


@pytest.mark.slow
def test_bad_input_is_one_line(done: Campaign, receiver: OtlpReceiver) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        away = f"http://127.0.0.1:{closed.getsockname()[1]}"
        cases = [
            (["--run", "run-nope", "--endpoint", receiver.url], "no run run-nope"),
            (["--campaign", "nope", "--endpoint", receiver.url], "no campaign nope"),
            (["--run", done.runs[0], "--endpoint", "ftp://x"], "is not an http(s) URL"),
            (["--run", done.runs[0], "--endpoint", "http://h:99999"], "out of range"),
            (["--endpoint", receiver.url], "give one of --run RUN or --campaign"),
            (["--run", done.runs[0], "--endpoint", away, "--timeout", "1"], "cannot send spans"),
        ]
        for args, message in cases:
            code, said = labrxiv(done.data_dir, "export", "otel", *args)
            assert code == 1 and message in said and "Traceback" not in said, (args, said)
    assert receiver.spans == []


@pytest.mark.slow
def test_the_live_sink_sends_each_span_once_across_restarts_and_refusals(
    done: Campaign, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    source = done.system.store
    cut = cut_inside_a_call(source)
    data_dir = tmp_path / "grown"
    copy_log(source, EventStore.from_url(f"sqlite:///{_db(data_dir)}"), 0, cut)
    sink = ["projector", "--once", "--otel-endpoint", receiver.url]
    code, said = labrxiv(data_dir, *sink)
    assert code == 0, said
    first = len(receiver.spans)
    assert 0 < first, said
    assert 0 < first < len(expected(done)), "only the spans complete at the cut"
    assert not [s for s in receiver.spans if s.parent_id == ""], "no run had finished"
    code, said = labrxiv(data_dir, *sink)  # a restart with nothing new: nothing sent
    assert code == 0 and len(receiver.spans) == first and "sent 0 span(s)" in said
    copy_log(source, EventStore.from_url(f"sqlite:///{_db(data_dir)}"), cut, source.max_position())
    receiver.refuse = 1  # the endpoint is down: the checkpoint stays, nothing is lost
    code, said = labrxiv(data_dir, *sink)
    assert code == 1 and "cannot send spans" in said and len(receiver.spans) == first
    code, said = labrxiv(data_dir, *sink)
    assert code == 0, said
    counts = Counter(r.span_id for r in receiver.spans)
    assert set(counts.values()) == {1}, "no span was sent twice"
    assert counts.keys() == {f"{s.span_id:016x}" for s in expected(done)}, "none was lost"


@pytest.mark.slow
def test_a_sink_that_cannot_send_keeps_its_checkpoint(
    done: Campaign, receiver: OtlpReceiver
) -> None:
    sender = SpanSender(receiver.url)
    sink = OtelSink(done.system.store, sender)
    receiver.refuse = 1
    with pytest.raises(ExportFailed, match="cannot send spans to"):
        sink.catch_up()
    assert sink.position() == 0 and receiver.spans == []
    assert sink.follow_step() > 0
    assert sink.position() == done.system.store.max_position()
    assert sink.sent == len(expected(done)) == len(receiver.spans)
    assert Counter(r.span_id for r in receiver.spans).most_common(1)[0][1] == 1
    sender.close()


def _db(data_dir: Path) -> Path:
    path = data_dir / "labrxiv.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.slow
def test_the_projector_goes_on_while_the_endpoint_refuses_and_sends_later(
    done: Campaign, receiver: OtlpReceiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = EventStore.from_url(f"sqlite:///{_db(tmp_path)}")
    copy_log(done.system.store, store, 0, done.system.store.max_position())
    runner = ProjectionRunner(store, [RunsProjector()])
    sender = SpanSender(receiver.url)
    sink = OtelSink(store, sender)
    receiver.refuse = 2
    stop = threading.Event()
    following = threading.Thread(
        target=follow, args=(runner, 0.05, stop), kwargs={"sinks": [sink.follow_step]}
    )
    following.start()
    try:
        deadline = time.monotonic() + 120  # a guard against a hang, not a measure
        while sink.position() < store.max_position() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        following.join()
        sender.close()
    assert sink.position() == store.max_position()
    with store.engine.connect() as conn:
        assert {r.stream for r in runs_of(conn)} == set(done.runs), "the read model went on"
    assert receiver.requests >= 3 and "trying again in" in caplog.text
    counts = Counter(r.span_id for r in receiver.spans)
    assert set(counts.values()) == {1} and len(counts) == len(expected(done))
