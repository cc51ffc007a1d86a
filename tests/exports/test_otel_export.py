"""`labrxiv export otel` and the projector's live sink, against an OTLP/HTTP receiver
that decodes what arrives with `opentelemetry-proto`: the spans the log gives, sent with
their ids, parents and attributes; each span sent once by the sink across a restart and
an endpoint that refused a page; bad input told in one line."""

import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from typer.testing import CliRunner

from events import Event, EventStore
from labrxiv.cli import app
from labrxiv.projecting import follow
from projections.checkpoints import read_checkpoint
from projections.exports.otel_runs import run_traces
from projections.exports.otel_send import BadEndpoint, ExportFailed, SpanSender, traces_url
from projections.exports.otel_sink import REFUSALS_TO_SKIP, OtelSink
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
    while sink.follow_step():  # a page a step
        pass
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


def _following(
    runner: ProjectionRunner, sink_step: Callable[[], int], until: Callable[[], bool]
) -> None:
    """Run the projector's loop with `sink_step` as its sink until `until()` holds."""
    stop = threading.Event()
    following = threading.Thread(
        target=follow, args=(runner, 0.05, stop), kwargs={"sinks": [sink_step]}
    )
    following.start()
    try:
        deadline = time.monotonic() + 120  # a guard against a hang, not a measure
        while not until() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        following.join()


def _applied(store: EventStore) -> int:
    with store.engine.connect() as conn:
        return read_checkpoint(conn, RunsProjector.name)


@pytest.mark.slow
def test_the_read_models_catch_up_while_the_sink_works_through_its_backlog(
    done: Campaign, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    source = done.system.store
    cut = cut_inside_a_call(source)
    store = EventStore.from_url(f"sqlite:///{_db(tmp_path)}")
    copy_log(source, store, 0, cut)
    runner = ProjectionRunner(store, [RunsProjector()])
    sender = SpanSender(receiver.url)
    sink = OtelSink(store, sender, page=20)
    seen: list[tuple[int, int]] = []
    """(the read model's checkpoint, the sink's) as each sink step began."""

    def step() -> int:
        if not seen:  # the log grows while the sink has its whole backlog ahead
            copy_log(source, store, cut, source.max_position())
        seen.append((_applied(store), sink.position()))
        return sink.follow_step()

    try:
        _following(runner, step, lambda: sink.position() == store.max_position())
    finally:
        sender.close()
    end = store.max_position()
    assert sink.position() == end
    assert any(model == end and at < cut for model, at in seen), (
        "the read model took in the grown log while the sink was still at its start",
        seen[:5],
    )
    counts = Counter(r.span_id for r in receiver.spans)
    assert set(counts.values()) == {1} and len(counts) == len(expected(done))


@pytest.mark.slow
def test_a_page_the_endpoint_refuses_is_skipped_said_and_counted(
    done: Campaign, receiver: OtlpReceiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = EventStore.from_url(f"sqlite:///{_db(tmp_path)}")
    copy_log(done.system.store, store, 0, done.system.store.max_position())
    runner = ProjectionRunner(store, [RunsProjector()])
    sender = SpanSender(receiver.url)
    sink = OtelSink(store, sender, page=50)
    receiver.refuse = REFUSALS_TO_SKIP  # 400 each time: the same page, refused for good
    counted = REGISTRY.get_sample_value("labrxiv_otel_spans_skipped_total") or 0.0
    try:
        _following(runner, sink.follow_step, lambda: sink.position() == store.max_position())
    finally:
        sender.close()
    assert sink.position() == store.max_position()
    assert _applied(store) == store.max_position(), "the read model went on"
    said = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(said) == 1, said
    match = re.search(r"refused 3 times: skipped (\d+) span\(s\) .* positions (\d+)-(\d+)", said[0])
    assert match and "spans refused by the test" in said[0] and receiver.url in said[0]
    skipped, first, last = (int(g) for g in match.groups())
    built = expected(done)
    lost = {f"{s.span_id:016x}" for s in built if first <= s.closed_at <= last}
    got = Counter(r.span_id for r in receiver.spans)
    assert skipped == sink.skipped == len(lost) > 0
    assert set(got.values()) == {1} and got.keys() == {f"{s.span_id:016x}" for s in built} - lost
    now = REGISTRY.get_sample_value("labrxiv_otel_spans_skipped_total") or 0.0
    assert now - counted == skipped


@pytest.mark.slow
def test_an_endpoint_that_is_unavailable_holds_the_sink_not_the_read_models(
    done: Campaign, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    store = EventStore.from_url(f"sqlite:///{_db(tmp_path)}")
    copy_log(done.system.store, store, 0, done.system.store.max_position())
    runner = ProjectionRunner(store, [RunsProjector()])
    sender = SpanSender(receiver.url, timeout_s=1.0)
    sink = OtelSink(store, sender, page=50)
    receiver.refuse, receiver.refuse_status = 10**9, 503  # retryable: never skipped
    try:
        _following(runner, sink.follow_step, lambda: receiver.requests >= 3)
        assert _applied(store) == store.max_position(), "the read model went on"
        assert sink.position() < store.max_position() and sink.skipped == 0
        receiver.refuse = 0  # the endpoint is back
        _following(runner, sink.follow_step, lambda: sink.position() == store.max_position())
    finally:
        sender.close()
    counts = Counter(r.span_id for r in receiver.spans)
    assert set(counts.values()) == {1} and len(counts) == len(expected(done))


def _span() -> Span:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return Span("chat m", "client", 1, 2, None, at, at, {"k": "v"}, closed_at=1)


def test_the_endpoint_url_keeps_its_query_and_refuses_credentials(
    receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert traces_url("http://h:4318?tenant=a") == "http://h:4318/v1/traces?tenant=a"
    assert traces_url("http://h:4318/?tenant=a") == "http://h:4318/v1/traces?tenant=a"
    assert traces_url("http://h:4318") == "http://h:4318/v1/traces"
    assert traces_url("http://h/otlp/traces?x=1") == "http://h/otlp/traces?x=1"
    for secret in ("https://user:s3cret@h:4318", "https://s3cret@h", "http://user:@h"):
        with pytest.raises(BadEndpoint, match="OTEL_EXPORTER_OTLP_HEADERS") as refused:
            traces_url(secret)
        assert "s3cret" not in str(refused.value) and "\n" not in str(refused.value)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret")
    sender = SpanSender(receiver.url + "?tenant=a")
    try:
        sender.send([_span()])
    finally:
        sender.close()
    assert receiver.paths == ["/v1/traces?tenant=a"] and len(receiver.spans) == 1
    assert receiver.headers[0]["authorization"] == "Bearer s3cret"


def test_credentials_in_the_endpoint_are_refused_in_one_line(tmp_path: Path) -> None:
    url = "https://user:s3cret@collector.invalid:4318"
    for args in (
        ["export", "otel", "--run", "run-x", "--endpoint", url],
        ["projector", "--once", "--otel-endpoint", url],
    ):
        code, said = labrxiv(tmp_path, *args)
        assert code == 1 and "OTEL_EXPORTER_OTLP_HEADERS" in said, (args, said)
        assert "s3cret" not in said and "Traceback" not in said, (args, said)


@pytest.mark.slow
def test_the_sink_reads_each_runs_events_once_across_its_pages(
    done: Campaign, receiver: OtlpReceiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EventStore.from_url(f"sqlite:///{_db(tmp_path)}")
    copy_log(done.system.store, store, 0, done.system.store.max_position())
    stream = store.read_stream
    read = Counter[str]()

    def counted(run: str, after_version: int = -1, limit: int | None = None) -> list[Event]:
        events = stream(run, after_version, limit)
        read[run] += len(events)
        return events

    monkeypatch.setattr(store, "read_stream", counted)
    sender = SpanSender(receiver.url)
    sink = OtelSink(store, sender, page=5)
    try:
        while sink.follow_step():
            pass
    finally:
        sender.close()
    assert sink.position() == store.max_position()
    assert read.keys() == set(done.runs)
    for run in done.runs:
        assert read[run] <= len(stream(run)), (run, read[run], len(stream(run)))
    counts = Counter(r.span_id for r in receiver.spans)
    assert set(counts.values()) == {1} and len(counts) == len(expected(done))
