"""`labrxiv export otel`: a run's or a campaign's traces, sent over OTLP/HTTP to any
OpenTelemetry backend (docs/exports.md, "OpenTelemetry traces")."""

from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from labrxiv.cli_common import read_runner
from labrxiv.console import console
from labrxiv.errors import NotFound, ShellError, Unreachable
from labrxiv.lookup import resolve_campaign, resolve_run
from projections.runs import runs_of

if TYPE_CHECKING:  # the exporter's modules take 0.2 s to import: only the commands that send
    from events import EventStore
    from projections.exports.otel_sink import OtelSink


def export_otel(
    endpoint: str = typer.Option(
        ...,
        "--endpoint",
        help="The OTLP/HTTP endpoint (http://host:4318, or a URL with its path, e.g. "
        "http://127.0.0.1:6006/v1/traces for Phoenix).",
    ),
    run: str | None = typer.Option(None, "--run", help="This run's trace (an id from `runs`)."),
    campaign: str | None = typer.Option(
        None, "--campaign", help="Every run, review and inspection of this campaign."
    ),
    timeout: float = typer.Option(
        10.0, "--timeout", min=0.1, help="Seconds to wait for the endpoint."
    ),
) -> None:
    """Send runs' traces (GenAI semantic conventions: `invoke_agent`, `chat`,
    `execute_tool` spans, the grader's scores as evaluation events), one trace a run (and,
    for a campaign, a review or an inspection), with ids derived from the log: sent
    twice, they are the same spans."""
    if (run is None) == (campaign is None):
        raise ShellError("give one of --run RUN or --campaign CAMPAIGN")
    from projections.exports.otel_runs import reviews_and_inspections, run_traces
    from projections.exports.otel_send import ExportFailed, SpanSender

    url = otlp_url(endpoint)
    runner = read_runner()
    runner.catch_up()
    with runner.store.engine.connect() as conn:
        if run is not None:
            runs = [resolve_run(conn, run)]
        else:
            named = resolve_campaign(runner.store, conn, campaign)
            assert named is not None
            runs = [view.stream for view in runs_of(conn, campaign=named)]
            if not runs:
                raise NotFound(f"campaign {named} has no runs")
            runs += reviews_and_inspections(conn, named)
    traces = run_traces(runner.store, runs)
    sender = SpanSender(url, timeout_s=timeout)
    try:
        sender.send([span for trace in traces for span in trace.spans])
    except ExportFailed as exc:
        raise Unreachable(str(exc)) from None
    finally:
        sender.close()
    for trace in traces:
        note = "" if trace.finished else " (not finished: its own span and open calls not sent)"
        said = f"{trace.run}: trace {trace.trace_id:032x}, {len(trace.spans)} span(s){note}"
        console.print(escape(said), soft_wrap=True)
    console.print(f"sent to {escape(url)}", soft_wrap=True)


def otlp_url(endpoint: str) -> str:
    """Where spans for `endpoint` are posted; a `ShellError` naming what is wrong with it."""
    from projections.exports.otel_send import BadEndpoint, traces_url

    try:
        return traces_url(endpoint)
    except BadEndpoint as exc:
        raise ShellError(str(exc)) from None


def open_sink(store: "EventStore", url: str) -> "OtelSink":
    """The projector's live sink to `url` (`projections.exports.otel_sink`)."""
    from projections.exports.otel_send import SpanSender
    from projections.exports.otel_sink import OtelSink

    return OtelSink(store, SpanSender(url))


def send_once(sink: "OtelSink") -> None:
    """Send what the log completed since the sink's checkpoint, and say how much."""
    from projections.exports.otel_send import ExportFailed

    try:
        sink.catch_up()
    except ExportFailed as exc:
        raise Unreachable(f"{exc} (the sink's checkpoint stays where it was)") from None
    console.print(f"sent {sink.sent} span(s) to {escape(sink.sender.url)}", soft_wrap=True)
