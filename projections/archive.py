"""The archive read model (AgentRxiv): papers, their claims, versions and lineage.

Lineage is two tables: `paper_citations` (which paper builds on which) and
`paper_retrievals` (which run was shown which paper, for what query). `paper_terms`
is the full-text index that `projections.archive_search` ranks with. Each claim row
carries its `verified` and `measured` marks (`runstate.verification`), folded from the
author's events before the paper (those in the paper's page taken from it, earlier ones
read on the projector's connection): they precede the paper in the log, so a rebuilt
archive has the marks the incremental one has.

Rows are only ever inserted (PostgreSQL: by COPY): a page is applied once (the runner
moves the checkpoint in the same transaction), so the fold needs no update path. A
`paper.submitted` whose `paper_id` is already in the archive is kept out of it (the
first submission stands) and logged, instead of failing the projector on a duplicate
key forever.
"""

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Column, Connection, DateTime, Text, func, select
from sqlmodel import Field, SQLModel

from events.bounded_cache import BoundedCache
from events.envelope import as_utc
from events.recorded import Fact, Recorded
from events.store import EVENTS, rows_to_records
from events.tables import JsonType, table_of
from projections.bulk import insert_rows
from projections.forks import log_loader
from projections.projector import Projector
from runstate.bm25 import term_counts
from runstate.fold import fold_from
from runstate.state import RunState
from runstate.verification import Graded, checked_claims, graded_of, standing

log = logging.getLogger(__name__)

KEPT_RUNS = 10_000
"""Authors whose state at their last paper the projector keeps (least recently used
out): their next paper is folded from it, not from the start of the run."""


class PaperRow(SQLModel, table=True):
    """A paper as the archive shows it."""

    __tablename__ = "papers"

    paper_id: str = Field(primary_key=True, max_length=80)
    """The archive id the lab's submission chose."""
    task: str = Field(max_length=200, index=True)
    """The task the paper reports on."""
    lab: str | None = Field(default=None, max_length=200, index=True)
    """The submitting lab (the event's actor)."""
    run: str = Field(max_length=200, index=True)
    """The run stream it was submitted from."""
    campaign: str | None = Field(default=None, max_length=200, index=True)
    """The campaign (correlation id) of that run, if any."""
    title: str = Field(sa_column=Column(Text, nullable=False))
    abstract: str = Field(sa_column=Column(Text, nullable=False))
    body: str = Field(sa_column=Column(Text, nullable=False))
    """Markdown, as submitted."""
    method: dict[str, Any] = Field(sa_column=Column(JsonType, nullable=False))
    """The configuration the paper's best result used."""
    claims: list[dict[str, Any]] = Field(sa_column=Column(JsonType, nullable=False))
    """The claims as submitted (also one row each in `paper_claims`)."""
    revises: str | None = Field(default=None, max_length=80)
    """The paper this one is a new version of."""
    version: int = 1
    """1 for a first paper; the revised paper's version + 1 for a revision."""
    number_in_run: int = 1
    """1 for the run's first paper, 2 for its second…"""
    length: int = 0
    """Words in title, abstract and body: the document length full-text ranking uses."""
    submitted_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    position: int = Field(sa_column=Column(BigInteger, nullable=False, index=True))
    """The log position of the `paper.submitted` event: archive order."""


class PaperClaimRow(SQLModel, table=True):
    """One number a paper reports, in the order the paper lists them."""

    __tablename__ = "paper_claims"

    paper_id: str = Field(primary_key=True, max_length=80)
    claim_index: int = Field(primary_key=True)
    """0 for the paper's first (headline) claim."""
    subtask: str = Field(max_length=200, index=True)
    metric: str = Field(max_length=200)
    value: float
    attempt: int | None = None
    """The run's scored attempt the number comes from, when the paper says."""
    direction: str | None = Field(default=None, max_length=8)
    """Which way the subtask is better (`maximize`, `minimize`), as the paper's event
    records it from the task card; None when it does not."""
    verified: bool = False
    """Whether the author's graded attempt the claim names measured the value claimed."""
    measured: float | None = None
    """What that attempt measured (a fraction, however the claim wrote it); None unless
    verified."""
    graded: float | None = None
    """What the attempt the claim names measured of its subtask, verified or not (an
    overclaim's true value); None when the run has no such graded attempt."""


class PaperCitationRow(SQLModel, table=True):
    """Paper `paper_id` builds on paper `cited_id`."""

    __tablename__ = "paper_citations"

    paper_id: str = Field(primary_key=True, max_length=80)
    cited_id: str = Field(primary_key=True, max_length=80, index=True)
    rank: int
    """Where the citation stands in the paper's list, from 1."""


class PaperRetrievalRow(SQLModel, table=True):
    """A run was shown a paper (a `papers.retrieved` event, one row per paper shown)."""

    __tablename__ = "paper_retrievals"

    event_position: int = Field(sa_column=Column(BigInteger, primary_key=True))
    """The log position of the `papers.retrieved` event."""
    rank: int = Field(primary_key=True)
    """Where the paper stood in what the run was shown, from 1."""
    paper_id: str = Field(max_length=80, index=True)
    run: str = Field(max_length=200, index=True)
    lab: str | None = Field(default=None, max_length=200)
    campaign: str | None = Field(default=None, max_length=200)
    query: str = Field(sa_column=Column(Text, nullable=False))
    """What the lab searched for (`read <id>` when it opened one paper)."""
    at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))


class PaperTermRow(SQLModel, table=True):
    """Full-text index: how often a word occurs in a paper's title, abstract and body."""

    __tablename__ = "paper_terms"

    term: str = Field(primary_key=True, max_length=64)
    paper_id: str = Field(primary_key=True, max_length=80)
    tf: int


PAPERS = table_of(PaperRow)
PAPER_CLAIMS = table_of(PaperClaimRow)
PAPER_CITATIONS = table_of(PaperCitationRow)
PAPER_RETRIEVALS = table_of(PaperRetrievalRow)
PAPER_TERMS = table_of(PaperTermRow)


class ArchiveProjector(Projector):
    """Folds `paper.submitted` and `papers.retrieved` into the archive tables."""

    name = "archive"
    cost = 0.2
    tables = (PAPERS, PAPER_CLAIMS, PAPER_CITATIONS, PAPER_RETRIEVALS, PAPER_TERMS)

    def __init__(self) -> None:
        self._standing: BoundedCache[str, RunState] = BoundedCache(KEPT_RUNS)
        """Each recent author's state before its last paper, least recently used first:
        a prefix of its stream in the log, which never changes (at worst missing: then
        the run is read from its start)."""

    def apply(self, conn: Connection, events: Sequence[Recorded]) -> None:
        """Insert the page's papers (with claims, citations, index) and retrievals."""
        submitted = [e for e in events if e.type == "paper.submitted"]
        if submitted:
            _insert_papers(conn, submitted, self._graded(conn, events))
        retrievals = [
            {
                "event_position": e.position,
                "rank": rank,
                "paper_id": paper_id,
                "run": e.stream,
                "lab": e.actor,
                "campaign": e.correlation_id,
                "query": e.payload["query"],
                "at": e.occurred_at,
            }
            for e in events
            if e.type == "papers.retrieved"
            for rank, paper_id in enumerate(e.payload["paper_ids"], start=1)
        ]
        insert_rows(conn, PAPER_RETRIEVALS, retrievals)

    def _graded(self, conn: Connection, page: Sequence[Recorded]) -> Callable[[Recorded], Graded]:
        """The author's graded attempts before a paper of `page`, on `conn`: folded on
        from the author's state kept at its previous paper, else from the start of its
        run."""
        load = log_loader(conn)
        authors = {e.stream for e in page if e.type == "paper.submitted"}
        held: dict[str, list[Recorded]] = {}
        for event in page:
            if event.stream in authors:
                held.setdefault(event.stream, []).append(event)

        def graded(paper: Recorded) -> Graded:
            mine = held[paper.stream]
            kept = self._standing.pop(paper.stream)
            if kept is not None and kept.version < paper.version:
                later = _between(conn, mine, kept.version, paper.version)
                state: RunState | None = fold_from(kept, later)
            else:
                state = standing(_between(conn, mine, -1, paper.version), load)
            if state is not None:
                self._standing.put(paper.stream, state)
            return graded_of(state)

        return graded


def _between(conn: Connection, held: Sequence[Recorded], after: int, before: int) -> list[Fact]:
    """The events of versions after `after` and before `before` of the stream whose
    events in the page are `held` (consecutive versions, as a page holds them): those in
    the page taken from it, only earlier ones read on `conn`."""
    stream = held[0].stream
    first = held[0].version
    if held[-1].version - first != len(held) - 1:  # not consecutive: all read on `conn`
        first, held = before, []
    earlier: list[Fact] = []
    if after + 1 < first:
        query = select(EVENTS).where(
            EVENTS.c.stream == stream,
            EVENTS.c.version > after,
            EVENTS.c.version < min(first, before),
        )
        rows = conn.execute(query.order_by(EVENTS.c.version))
        earlier = [r.typed_record() for r in rows_to_records(rows)]
    taken = held[max(after + 1 - first, 0) : max(before - first, 0)]
    return earlier + [e.typed_record() for e in taken]


def _insert_papers(
    conn: Connection, events: Sequence[Recorded], graded: Callable[[Recorded], Graded]
) -> None:
    ids = {e.payload["paper_id"] for e in events}
    revised = {e.payload["revises"] for e in events if e.payload.get("revises")}
    versions: dict[str, int] = dict(
        conn.execute(
            select(PAPERS.c.paper_id, PAPERS.c.version).where(PAPERS.c.paper_id.in_(ids | revised))
        ).all()
    )
    runs = {e.stream for e in events}
    per_run: Counter[str] = Counter(
        dict(
            conn.execute(
                select(PAPERS.c.run, func.count())
                .where(PAPERS.c.run.in_(runs))
                .group_by(PAPERS.c.run)
            ).all()
        )
    )
    papers, claims, citations, terms = [], [], [], []
    for event in events:
        p = event.payload
        if p["paper_id"] in versions:
            log.warning(
                "paper %s submitted again at position %d (run %s): the first submission stands",
                p["paper_id"],
                event.position,
                event.stream,
            )
            continue
        revises = p.get("revises")
        version = 1 + versions.get(revises, 1) if revises else 1
        versions[p["paper_id"]] = version
        per_run[event.stream] += 1
        counts = term_counts(f"{p['title']} {p['abstract']} {p['body']}")
        papers.append(
            {
                "paper_id": p["paper_id"],
                "task": p["task"],
                "lab": event.actor,
                "run": event.stream,
                "campaign": event.correlation_id,
                "title": p["title"],
                "abstract": p["abstract"],
                "body": p["body"],
                "method": p.get("method") or {},
                "claims": p.get("claims") or [],
                "revises": revises,
                "version": version,
                "number_in_run": per_run[event.stream],
                "length": sum(counts.values()),
                "submitted_at": event.occurred_at,
                "position": event.position,
            }
        )
        claims += [
            {
                "paper_id": p["paper_id"],
                "claim_index": index,
                "subtask": claim["subtask"],
                "metric": claim["metric"],
                "value": claim["value"],
                "attempt": claim.get("attempt"),
                "direction": claim.get("direction"),
                "verified": claim["verified"],
                "measured": claim["measured"],
                "graded": claim["graded"],
            }
            for index, claim in enumerate(checked_claims(p.get("claims") or [], graded(event)))
        ]
        cited = list(dict.fromkeys(p.get("cited") or []))  # a repeated id counts once
        citations += [
            {"paper_id": p["paper_id"], "cited_id": cited_id, "rank": rank}
            for rank, cited_id in enumerate(cited, start=1)
        ]
        terms += [{"term": t, "paper_id": p["paper_id"], "tf": n} for t, n in counts.items()]
    # Every row is new: a paper already in the archive was left out above, and the
    # other tables are keyed by the paper. A paper has a row per distinct word
    # (`paper_terms`): COPY sends them in one statement, not one statement each.
    for table, rows in (
        (PAPERS, papers),
        (PAPER_CLAIMS, claims),
        (PAPER_CITATIONS, citations),
        (PAPER_TERMS, terms),
    ):
        insert_rows(conn, table, rows)


# -- reading -------------------------------------------------------------------


@dataclass(frozen=True)
class PaperSummary:
    """A line of the archive listing."""

    paper_id: str
    task: str
    lab: str | None
    run: str
    campaign: str | None
    title: str
    version: int
    revises: str | None
    submitted_at: datetime
    position: int
    claims: list[dict[str, Any]]
    """As submitted: `[{subtask, metric, value, attempt}]`, headline first."""


@dataclass(frozen=True)
class ClaimMark:
    """A claim of a paper with what the log says of it."""

    subtask: str
    value: float
    """As claimed."""
    verified: bool
    measured: float | None
    """What the grader measured, when verified (a fraction, as the grader gives it)."""
    graded: float | None = None
    """What the grader measured of the attempt the claim names, verified or not."""


@dataclass(frozen=True)
class Retrieval:
    """A run was shown a paper."""

    run: str
    lab: str | None
    campaign: str | None
    query: str
    rank: int
    at: datetime
    event_position: int


@dataclass(frozen=True)
class PaperDetail:
    """A paper in full, with its lineage both ways."""

    paper: PaperSummary
    abstract: str
    body: str
    method: dict[str, Any]
    number_in_run: int
    cites: list[tuple[str, str | None]]
    """`(cited id, its title)` in the paper's order; title None if not in the archive."""
    cited: list[PaperSummary]
    """The cited papers that are in the archive, in the paper's order, in full (as
    `cited_by`)."""
    cited_by: list[PaperSummary]
    """Papers that cite it, in archive order."""
    revisions: list[PaperSummary]
    """Papers that revise it, in archive order."""
    retrievals: list[Retrieval]
    """Every time a run was shown it, in log order."""


SUMMARY_COLUMNS = [
    PAPERS.c.paper_id,
    PAPERS.c.task,
    PAPERS.c.lab,
    PAPERS.c.run,
    PAPERS.c.campaign,
    PAPERS.c.title,
    PAPERS.c.version,
    PAPERS.c.revises,
    PAPERS.c.submitted_at,
    PAPERS.c.position,
    PAPERS.c.claims,
]
"""The columns a `PaperSummary` is read from."""


def summary_of(row: Mapping[Any, Any]) -> PaperSummary:
    """The summary in a row of `SUMMARY_COLUMNS`, its time aware (SQLite reads it naive)."""
    values = dict(row)
    values["submitted_at"] = as_utc(values["submitted_at"])
    return PaperSummary(**values)


def list_papers(
    conn: Connection,
    task: str | None = None,
    campaign: str | None = None,
    lab: str | None = None,
) -> list[PaperSummary]:
    """The archive's papers in submission order, narrowed by task, campaign or lab."""
    query = select(*SUMMARY_COLUMNS).order_by(PAPERS.c.position)
    if task is not None:
        query = query.where(PAPERS.c.task == task)
    if campaign is not None:
        query = query.where(PAPERS.c.campaign == campaign)
    if lab is not None:
        query = query.where(PAPERS.c.lab == lab)
    return [summary_of(row._mapping) for row in conn.execute(query)]


def papers_by_id(conn: Connection, paper_ids: Sequence[str]) -> dict[str, PaperSummary]:
    """The summaries of those of `paper_ids` that are in the archive."""
    if not paper_ids:
        return {}
    query = select(*SUMMARY_COLUMNS).where(PAPERS.c.paper_id.in_(list(paper_ids)))
    return {row.paper_id: summary_of(row._mapping) for row in conn.execute(query)}


_DETAIL_ONLY = ("abstract", "body", "method", "number_in_run")
"""The columns a paper in full has beside its summary's."""


def get_paper(conn: Connection, paper_id: str) -> PaperDetail | None:
    """One paper in full, or None when the archive has no such id."""
    row = conn.execute(
        select(*SUMMARY_COLUMNS, *(PAPERS.c[k] for k in _DETAIL_ONLY)).where(
            PAPERS.c.paper_id == paper_id
        )
    ).first()
    if row is None:
        return None
    values = dict(row._mapping)
    extra = {k: values.pop(k) for k in _DETAIL_ONLY}
    cited_ids = list(
        conn.execute(
            select(PAPER_CITATIONS.c.cited_id)
            .where(PAPER_CITATIONS.c.paper_id == paper_id)
            .order_by(PAPER_CITATIONS.c.rank)
        ).scalars()
    )
    known = papers_by_id(conn, cited_ids)
    citing = (
        select(*SUMMARY_COLUMNS)
        .join(PAPER_CITATIONS, PAPER_CITATIONS.c.paper_id == PAPERS.c.paper_id)
        .where(PAPER_CITATIONS.c.cited_id == paper_id)
        .order_by(PAPERS.c.position)
    )
    cited_by = [summary_of(r._mapping) for r in conn.execute(citing)]
    revising = (
        select(*SUMMARY_COLUMNS).where(PAPERS.c.revises == paper_id).order_by(PAPERS.c.position)
    )
    revisions = [summary_of(r._mapping) for r in conn.execute(revising)]
    return PaperDetail(
        paper=summary_of(values),
        cites=[(i, known[i].title if i in known else None) for i in cited_ids],
        cited=[known[i] for i in cited_ids if i in known],
        cited_by=cited_by,
        revisions=revisions,
        retrievals=retrievals_of(conn, paper_id),
        **extra,
    )


def retrievals_of(conn: Connection, paper_id: str) -> list[Retrieval]:
    """Every time a run was shown `paper_id`, in log order."""
    r = PAPER_RETRIEVALS.c
    query = (
        select(r.run, r.lab, r.campaign, r.query, r.rank, r.at, r.event_position)
        .where(r.paper_id == paper_id)
        .order_by(r.event_position, r.rank)
    )
    return [Retrieval(**{**row._mapping, "at": as_utc(row.at)}) for row in conn.execute(query)]


def claim_marks(conn: Connection, paper_ids: Sequence[str]) -> dict[str, list[ClaimMark]]:
    """The claims of each of `paper_ids` in the paper's order, with their `verified` and
    `measured` marks (none for a paper the archive does not hold)."""
    if not paper_ids:
        return {}
    c = PAPER_CLAIMS.c
    query = (
        select(c.paper_id, c.subtask, c.value, c.verified, c.measured, c.graded)
        .where(c.paper_id.in_(list(paper_ids)))
        .order_by(c.paper_id, c.claim_index)
    )
    marks: dict[str, list[ClaimMark]] = {i: [] for i in paper_ids}
    for row in conn.execute(query):
        marks[row.paper_id].append(
            ClaimMark(row.subtask, float(row.value), bool(row.verified), row.measured, row.graded)
        )
    return marks
