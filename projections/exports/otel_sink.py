"""The live OpenTelemetry sink: a reader that tails the log by position with a
checkpoint, as a projector does, and sends each span once it is complete (a model call's
at its `model.responded` or `model.failed`, a tool call's at its `tool.returned`, a run's
at its `run.finished`: `Span.closed_at`).

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
"""

import hashlib
import logging
import time
from collections.abc import Sequence

from sqlalchemy import MetaData

from events import EventStore
from events.checkpoints import Checkpoints
from events.engines import writing
from events.recorded import Recorded
from events.schema import create_tables
from events.streams import stream_kind
from projections.exports.otel_send import ExportFailed, SpanSender
from projections.exports.otel_span import Span
from projections.exports.otel_spans import run_spans

log = logging.getLogger(__name__)

SINK_CHECKPOINTS = Checkpoints("export_checkpoints", MetaData())
"""How far each live export has sent the log, by its name."""

CLOSING_TYPES = frozenset({"model.responded", "model.failed", "tool.returned", "run.finished"})
"""The events that complete a span of their run."""

RETRY_CAP_S = 30.0
"""The longest wait before sending again to an endpoint that did not take a page."""


def sink_name(url: str) -> str:
    """The checkpoint's name for the endpoint `url`."""
    return f"otel {hashlib.sha256(url.encode()).hexdigest()[:16]}"


class OtelSink:
    """Sends the spans the log completes to one endpoint, each once in effect."""

    def __init__(self, store: EventStore, sender: SpanSender, page: int = 1000) -> None:
        self.store = store
        self.sender = sender
        self.name = sink_name(sender.url)
        self.page = page
        self.sent = 0
        """Spans the endpoint took from this sink."""
        self._ready = False
        self._failures = 0
        self._next_try = 0.0

    def catch_up(self) -> int:
        """Send the spans of every event after the checkpoint; returns how many events
        it went past. Raises `ExportFailed` when the endpoint does not take a page (the
        checkpoint stays before it)."""
        self._ensure_table()
        done = 0
        while moved := self._one_page():
            done += moved
        return done

    def follow_step(self) -> int:
        """`catch_up` for a loop that must go on when the endpoint is away: a page not
        taken is said once a try, and tried again after a backoff (doubling to
        `RETRY_CAP_S`); returns the events gone past (0 while waiting)."""
        if time.monotonic() < self._next_try:
            return 0
        try:
            done = self.catch_up()
        except ExportFailed as exc:
            wait = min(RETRY_CAP_S, 0.5 * 2**self._failures)
            self._failures += 1
            self._next_try = time.monotonic() + wait
            log.warning("%s; trying again in %.1fs", exc, wait)
            return 0
        self._failures = 0
        return done

    def position(self) -> int:
        """The checkpoint: the last position whose spans were sent."""
        self._ensure_table()
        with self.store.engine.connect() as conn:
            return SINK_CHECKPOINTS.read(conn, self.name)

    def _one_page(self) -> int:
        seen = self.position()
        records = self.store.read_records(seen, self.page)
        if not records:
            return 0
        to = records[-1].position
        spans = completed_spans(self.store, records, seen, to)
        self.sender.send(spans)
        with writing(self.store.engine) as conn:
            SINK_CHECKPOINTS.ensure(conn, [self.name])
            if not SINK_CHECKPOINTS.advance(conn, [self.name], seen, to):
                log.debug("%s: another process sent this page first", self.name)
        self.sent += len(spans)
        return len(records)

    def _ensure_table(self) -> None:
        if not self._ready:
            create_tables(self.store.engine, [SINK_CHECKPOINTS.table])
            self._ready = True


def completed_spans(store: EventStore, page: Sequence[Recorded], seen: int, to: int) -> list[Span]:
    """The spans that the events of `page` (positions after `seen`, up to `to`) complete,
    each built from its run's stream up to the page's last event of it."""
    last_version: dict[str, int] = {}
    for record in page:
        if record.type in CLOSING_TYPES and stream_kind(record.stream) == "run":
            last_version[record.stream] = max(record.version, last_version.get(record.stream, -1))
    spans: list[Span] = []
    for run, version in sorted(last_version.items()):
        try:
            built = run_spans(store.read_stream(run, limit=version + 1))
        except ValueError as exc:  # a hand-made stream that is no run's: nothing to send
            log.warning("%s: no spans sent: %s", run, exc)
            continue
        spans.extend(s for s in built if seen < s.closed_at <= to)
    return spans
