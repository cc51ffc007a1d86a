"""The live OpenTelemetry sink: a reader that tails the log by position with a
checkpoint, as a projector does, and sends each span once it is complete (a model call's
at its `model.responded` or `model.failed`, a tool call's at its `tool.returned`, a run's
at its `run.finished`; a review's or an inspection's at its end: `Span.closed_at`).

A page of the log is read after the checkpoint, the spans it completes are built from
their runs' streams (`otel_spans`, as `labrxiv export otel` builds them) and sent, and
only once the endpoint took them does the checkpoint move past the page. So a restart
sends nothing twice and loses nothing: a page whose spans were not taken (the endpoint
down) is sent again, from the same checkpoint, until they are. Should a process die
between the endpoint taking a page and its checkpoint's commit, that page is sent again
with the same ids (derived from the log, `otel_ids`), which a backend that keys spans by
id (Phoenix) keeps once.

The checkpoint is one per endpoint URL (a new endpoint is sent the log from its start),
in a table of its own that `labrxiv rebuild` leaves alone: rebuilding the read models
sends no span again. The network is not used inside a database transaction: the
checkpoint moves from the position read to the page's end in a short one afterwards.

A run's stream is read once, in parts: the sink keeps each unfinished run's fold
(`otel_spans.RunFold`) as of the pages gone past, and a page reads only the events of
its runs after their folds. A fold is pure of the stream's prefix, so it stays right
whoever moved the checkpoint; a run whose fold is not kept is read from its start.

A loop (`follow_step`, the projector's) sends one page a step, so the read models move
between the sink's pages however long its backlog. A page the endpoint did not take is
tried again after a backoff (doubling to `RETRY_CAP_S`), each try waiting at most the
exporter's timeout; a page the endpoint refuses outright (a 4xx other than 408 and 429,
which sending again cannot change) `REFUSALS_TO_SKIP` times running is skipped: an error
line names its positions and the endpoint's reason, and its spans are counted
(`labrxiv_otel_spans_skipped`, `OtelSink.skipped`); the spans the endpoint took are
counted too (`labrxiv_otel_spans_sent`, `OtelSink.sent`)."""

import hashlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import MetaData

from events import EventStore
from events.checkpoints import Checkpoints
from events.engines import writing
from events.recorded import Recorded
from events.schema import create_tables
from events.streams import stream_kind
from projections.exports.otel_metrics import spans_sent, spans_skipped
from projections.exports.otel_send import ExportFailed, SpanSender
from projections.exports.otel_span import Span
from projections.exports.otel_spans import CLOSING_TYPES, RunFold
from projections.exports.otel_streams import TRACED

log = logging.getLogger(__name__)

SINK_CHECKPOINTS = Checkpoints("export_checkpoints", MetaData())
"""How far each live export has sent the log, by its name."""

RETRY_CAP_S = 30.0
"""The longest wait before sending again to an endpoint that did not take a page."""

MAX_FOLDS = 10_000
"""Unfinished runs whose folds are kept between pages (past it they are dropped, and a
run's next page reads its stream from the start)."""

REFUSALS_TO_SKIP = 3
"""Refusals running of one page (`ExportFailed.refused`) after which it is skipped."""


def sink_name(url: str) -> str:
    """The checkpoint's name for the endpoint `url` (which holds no credentials:
    `otel_send.traces_url` refuses them, so a changed token is the same endpoint)."""
    return f"otel {hashlib.sha256(url.encode()).hexdigest()[:16]}"


@dataclass(frozen=True)
class Page:
    """The spans that the events after `seen` up to `to` complete."""

    seen: int
    to: int
    events: int
    spans: list[Span]
    folds: dict[str, RunFold]
    """The folds of the runs the page completes spans of, at their last event in it."""


class OtelSink:
    """Sends the spans the log completes to one endpoint, each once in effect."""

    def __init__(self, store: EventStore, sender: SpanSender, page: int = 1000) -> None:
        self.store = store
        self.sender = sender
        self.name = sink_name(sender.url)
        self.page = page
        self.sent = 0
        """Spans the endpoint took from this sink."""
        self.skipped = 0
        """Spans this sink skipped: the endpoint refused their page every time."""
        self._ready = False
        self._failures = 0
        self._refusals = (0, 0)
        """(the page's `seen`, how many times running the endpoint refused it)."""
        self._next_try = 0.0
        self._folds: dict[str, RunFold] = {}
        """Runs' folds as of pages gone past, so a page reads only their new events."""

    def catch_up(self) -> int:
        """Send the spans of every event after the checkpoint; returns how many events
        it went past. Raises `ExportFailed` when the endpoint does not take a page (the
        checkpoint stays before it)."""
        done = 0
        while page := self._next_page():
            self._send(page)
            done += page.events
        return done

    def follow_step(self) -> int:
        """One page, for a loop that must go on when the endpoint is away or refuses:
        returns the events gone past (0 while waiting or when nothing is new). A page not
        taken is said once a try and tried again after a backoff; one refused
        `REFUSALS_TO_SKIP` times running is skipped, and said as an error."""
        if time.monotonic() < self._next_try:
            return 0
        page = self._next_page()
        if page is None:
            return 0
        try:
            self._send(page)
        except ExportFailed as exc:
            return self._failed(page, exc)
        self._failures = 0
        self._refusals = (0, 0)
        return page.events

    def position(self) -> int:
        """The checkpoint: the last position whose spans were sent (or skipped)."""
        self._ensure_table()
        with self.store.engine.connect() as conn:
            return SINK_CHECKPOINTS.read(conn, self.name)

    def _next_page(self) -> Page | None:
        seen = self.position()
        records = self.store.read_records(seen, self.page)
        if not records:
            return None
        to = records[-1].position
        spans, folds = completed_spans(self.store, records, seen, to, self._folds)
        return Page(seen, to, len(records), spans, folds)

    def _send(self, page: Page) -> None:
        self.sender.send(page.spans)
        self._advance(page)
        self.sent += len(page.spans)
        spans_sent().inc(len(page.spans))

    def _advance(self, page: Page) -> None:
        with writing(self.store.engine) as conn:
            SINK_CHECKPOINTS.ensure(conn, [self.name])
            if not SINK_CHECKPOINTS.advance(conn, [self.name], page.seen, page.to):
                log.debug("%s: another process moved past this page first", self.name)
        if len(self._folds) > MAX_FOLDS:
            self._folds.clear()
        for run, fold in page.folds.items():
            if fold.finished:
                self._folds.pop(run, None)
            else:
                self._folds[run] = fold

    def _failed(self, page: Page, exc: ExportFailed) -> int:
        """Back off after a page not taken, or skip it when refused often enough."""
        if exc.refused:
            before, times = self._refusals
            times = times + 1 if before == page.seen else 1
            self._refusals = (page.seen, times)
            if times >= REFUSALS_TO_SKIP:
                self._skip(page, exc, times)
                return page.events
        wait = min(RETRY_CAP_S, 0.5 * 2**self._failures)
        self._failures += 1
        self._next_try = time.monotonic() + wait
        log.warning("%s; trying again in %.1fs", exc, wait)
        return 0

    def _skip(self, page: Page, exc: ExportFailed, times: int) -> None:
        lost = len(page.spans) - exc.taken
        self._advance(page)
        self.skipped += lost
        spans_skipped().inc(lost)
        self._failures = 0
        self._refusals = (0, 0)
        self._next_try = 0.0
        log.error(
            "%s; refused %d times: skipped %d span(s) completed at log positions %d-%d",
            exc,
            times,
            lost,
            page.seen + 1,
            page.to,
        )

    def _ensure_table(self) -> None:
        if not self._ready:
            create_tables(self.store.engine, [SINK_CHECKPOINTS.table])
            self._ready = True


def completed_spans(
    store: EventStore,
    page: Sequence[Recorded],
    seen: int,
    to: int,
    folds: Mapping[str, RunFold] | None = None,
) -> tuple[list[Span], dict[str, RunFold]]:
    """The spans that the events of `page` (positions after `seen`, up to `to`) complete,
    each built from its run's stream up to the page's last event of it; and each such
    run's fold at that event. A run's fold in `folds` (from an earlier page) is gone on
    from, so only the run's events after it are read; without one, its whole stream is."""
    last_version: dict[str, int] = {}
    for record in page:
        if record.type in CLOSING_TYPES and stream_kind(record.stream) in TRACED:
            last_version[record.stream] = max(record.version, last_version.get(record.stream, -1))
    spans: list[Span] = []
    after: dict[str, RunFold] = {}
    for run, version in sorted(last_version.items()):
        known = (folds or {}).get(run)
        fold = known.copy() if known is not None and known.version < version else RunFold()
        events = store.read_stream(run, after_version=fold.version, limit=version - fold.version)
        try:
            built = fold.feed(events)
        except ValueError as exc:  # a hand-made stream that is no run's: nothing to send
            log.warning("%s: no spans sent: %s", run, exc)
            continue
        spans.extend(s for s in built if seen < s.closed_at <= to)
        after[run] = fold
    return spans, after
