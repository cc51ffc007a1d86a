"""The findings read model: what the failure-mode detectors (`analysis.detectors`) find in
each run, one row per finding, and each run's integrity verdict (`analysis.verdict`).

A run's rows are a pure function of its events up to the projector's checkpoint: every
page that holds events of a run runs every detector on the run's whole stream up to the
page's end and replaces the run's rows. The last page that touched a run set its rows
from all its events so far, whatever the pages before it were, so rebuilt equals
incremental row for row, for running runs too (their findings so far).

A fork is judged on the trajectory it stands on: its parent's events up to the fork
point (read from the log, or kept), then its own (`analysis.detectors.detect`'s `load`).

Why the whole stream and not the page: the detectors judge a call by what came after it
(an unaddressed degenerate result, a file overwritten and then read) and by the state
of the run at each step (`runstate.trajectory`), so they have no state to carry from one
page to the next. What is carried is the run's typed events: validating a stored event's
payload (`Recorded.typed_record`: no pydantic envelope around it) costs ~4 µs, a third
of judging it, so the typed stream of a running run is kept in memory between pages
(bounded; a run that fell out is read again from the log in one query with the page's
other such runs).

What it costs: a run is validated once and judged once for each page that touches it.
In a rebuild (20,000 events a transaction) most runs lie in one or two transactions; a
run that spans many (thousands of runs open at once) is judged many times. Live, a
running run is judged on every catch-up that brings it events: O(its length) each time.
docs/benchmarks.md ("Rebuild") has the figures.
"""

from collections.abc import Iterable, Sequence
from uuid import UUID

import orjson
from sqlalchemy import BigInteger, Column, Connection, delete, select
from sqlmodel import Field, SQLModel

from analysis.detectors import detect
from analysis.finding import Finding
from analysis.findings_hook import RunFindings
from analysis.verdict import verdict
from events.bounded_cache import BoundedCache
from events.payloads import RunFinished
from events.recorded import Fact, Recorded, TypedRecord
from events.store import EVENTS, rows_to_records
from events.tables import table_of
from projections.bulk import born_streams, insert_rows
from projections.forks import log_loader
from projections.projector import Projector
from projections.run_rows import by_run
from runstate.fork import Load

KEPT_EVENTS = 100_000
"""Typed events of running runs kept between pages, at most (a few KB each)."""


class FindingRow(SQLModel, table=True):
    """One finding of one run."""

    __tablename__ = "findings"

    run: str = Field(primary_key=True, max_length=200)
    number: int = Field(primary_key=True)
    """Its place among the run's findings (0, 1, 2…), in the order `detect` gives them."""
    campaign: str | None = Field(default=None, max_length=200, index=True)
    mode: str = Field(max_length=40)
    detector: str = Field(max_length=80)
    severity: str = Field(max_length=10)
    summary: str
    events: str
    """The ids of the events that prove it, as a JSON array of strings."""


class FindingsRunRow(SQLModel, table=True):
    """A run's verdict, from its findings so far."""

    __tablename__ = "findings_runs"

    run: str = Field(primary_key=True, max_length=200)
    campaign: str | None = Field(default=None, max_length=200, index=True)
    verdict: str = Field(max_length=20)
    """PASS, SUSPICIOUS or FAIL (`analysis.verdict`)."""
    findings: int
    finished: bool
    """Whether the run's `run.finished` was among the events judged."""
    through_position: int = Field(sa_column=Column(BigInteger, nullable=False))
    """The log position of the run's last event judged."""
    through_version: int


FINDINGS = table_of(FindingRow)
FINDINGS_RUNS = table_of(FindingsRunRow)


class FindingsProjector(Projector):
    """Runs the detectors on every run a page touches and replaces its findings."""

    name = "findings"
    version = 2
    """2: the detectors read an agent's actions through `events.actions` (a reported call
    named as a lab call is not a call beside the lab call) and its unseen workspace
    changes."""
    cost = 9.3
    tables = (FINDINGS, FINDINGS_RUNS)

    def __init__(self) -> None:
        self._kept: BoundedCache[str, list[TypedRecord]] = BoundedCache(KEPT_EVENTS, len)
        """Running runs' typed events, `KEPT_EVENTS` at most; always a prefix of the
        run's stream in the log (never wrong, at worst short: then it is read again)."""

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        """Judge each run the page touches on its stream up to the page's end."""
        touched = by_run(events)
        if not touched:
            return
        born = born_streams(events)
        earlier = self._earlier(conn, touched, events[0].position)
        runs, findings = [], []
        parents = self._parents(conn)
        for run, group in touched.items():
            stream = earlier.get(run, []) + [record.typed_record() for record in group]
            self._keep(run, stream)
            if stream[0].type != "run.started":
                continue  # not a run the detectors can read (its stream must begin so)
            found = detect(stream, parents)
            campaign = stream[0].correlation_id
            last = stream[-1]
            runs.append(
                {
                    "run": run,
                    "campaign": campaign,
                    "verdict": verdict(found),
                    "findings": len(found),
                    "finished": any(isinstance(e.payload, RunFinished) for e in stream),
                    "through_position": last.position,
                    "through_version": last.version,
                }
            )
            findings.extend(_rows(run, campaign, found))
        stored = sorted(touched.keys() - born)
        if stored:
            conn.execute(delete(FINDINGS).where(FINDINGS.c.run.in_(stored)))
            conn.execute(delete(FINDINGS_RUNS).where(FINDINGS_RUNS.c.run.in_(stored)))
        insert_rows(conn, FINDINGS_RUNS, runs)
        insert_rows(conn, FINDINGS, findings)

    def _earlier(
        self, conn: Connection, touched: dict[str, list[Recorded]], first: int
    ) -> dict[str, list[TypedRecord]]:
        """Each touched run's typed events before this page: kept ones, and the others
        read from the log in one query (positions before the page's first)."""
        earlier: dict[str, list[TypedRecord]] = {}
        missing = []
        for run, group in touched.items():
            before = group[0].version
            if before == 0:
                continue
            kept = self._kept.get(run)
            if kept is not None and len(kept) >= before and kept[before - 1].version == before - 1:
                earlier[run] = kept[:before]
            else:
                missing.append(run)
        if missing:
            query = select(EVENTS).where(EVENTS.c.stream.in_(missing), EVENTS.c.position < first)
            for record in rows_to_records(conn.execute(query.order_by(EVENTS.c.position))):
                earlier.setdefault(record.stream, []).append(record.typed_record())
        return earlier

    def _parents(self, conn: Connection) -> Load:
        """A fork's parent's typed events up to the fork point (kept ones, else read from
        the log: they precede the fork's `run.started`, so rebuilt equals incremental)."""

        def load(stream: str, version: int) -> Sequence[Fact]:
            kept = self._kept.get(stream)
            if kept is not None and len(kept) > version and kept[version].version == version:
                return kept[: version + 1]
            return from_log(stream, version)

        from_log = log_loader(conn)
        return load

    def _keep(self, run: str, stream: list[TypedRecord]) -> None:
        """Keep a running run's typed events for its next page; forget a finished run's."""
        if stream[-1].type == "run.finished":
            self._kept.pop(run)
        else:
            self._kept.put(run, stream)


def _rows(run: str, campaign: str | None, found: Iterable[Finding]) -> list[dict[str, object]]:
    return [
        {
            "run": run,
            "number": number,
            "campaign": campaign,
            "mode": f.mode,
            "detector": f.detector,
            "severity": f.severity,
            "summary": f.summary,
            "events": orjson.dumps([str(i) for i in f.events]).decode(),
        }
        for number, f in enumerate(found)
    ]


# -- reading -----------------------------------------------------------------------


def findings_of(
    conn: Connection, run: str | None = None, campaign: str | None = None
) -> dict[str, RunFindings]:
    """The verdict and findings of one run, or of a campaign's runs, by run, as far as the
    read model has judged them."""
    verdicts_query = select(FINDINGS_RUNS.c.run, FINDINGS_RUNS.c.verdict)
    query = select(FINDINGS)
    if run is not None:
        verdicts_query = verdicts_query.where(FINDINGS_RUNS.c.run == run)
        query = query.where(FINDINGS.c.run == run)
    if campaign is not None:
        verdicts_query = verdicts_query.where(FINDINGS_RUNS.c.campaign == campaign)
        query = query.where(FINDINGS.c.campaign == campaign)
    verdicts = conn.execute(verdicts_query).all()
    found: dict[str, list[Finding]] = {name: [] for name, _ in verdicts}
    for row in conn.execute(query.order_by(FINDINGS.c.run, FINDINGS.c.number)).mappings():
        found[row["run"]].append(
            Finding(
                mode=row["mode"],
                detector=row["detector"],
                severity=row["severity"],
                summary=row["summary"],
                events=tuple(UUID(i) for i in orjson.loads(row["events"])),
            )
        )
    return {name: RunFindings(verdict=v, findings=tuple(found[name])) for name, v in verdicts}
