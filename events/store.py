"""The event store: append batches atomically, read by position or by stream.

Rules every backend keeps (tests/events/test_store_conformance.py checks them):
- appending an id that is already stored is a no-op;
- a batch's events of one stream are one producer's take (a lab step's events): if some
  of them are stored and some not, it is a second take of what the log already holds
  that came out differently, and none of them is appended (`AppendResult.diverged`);
- a stream's events must continue its versions with no gap; a stale or skipped
  version is a `ConflictError` and nothing of the batch is written;
- a stream whose last event ends it (`events.streams.ENDS`: a run's `run.finished`)
  takes no more: continuing it is a `StreamEnded` conflict;
- a batch is appended whole or not at all;
- positions are committed in order, so a tailer never skips an event.
"""

import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import product
from typing import Any, TypedDict, Unpack

from sqlalchemy import Engine, Integer, String, bindparam, func, insert, select, true
from sqlalchemy.dialects.postgresql import ARRAY

from events.blobs import digest
from events.engines import WRITER_OPTIONS, lock_for_append, make_engine, writing
from events.envelope import Event, as_utc
from events.errors import BlobMismatch, ConflictError, StreamEnded
from events.gc_pause import gc_paused
from events.ids import utcnow
from events.payloads import BY_TYPE
from events.recorded import Recorded
from events.schema import create_tables
from events.storable import storable
from events.streams import ENDS
from events.tables import LOG_TABLES, BlobRow, DeadLetterRow, EventRow, table_of, text_limit
from events.upgrade import upgrade
from events.upsert import insert_ignore

log = logging.getLogger(__name__)

EVENTS = table_of(EventRow)
BLOBS = table_of(BlobRow)
DEAD = table_of(DeadLetterRow)
_COLUMNS = [c for c in EVENTS.c]

_STREAM_AFTER = (
    select(*_COLUMNS)
    .where(EVENTS.c.stream == bindparam("stream"), EVENTS.c.version > bindparam("after"))
    .order_by(EVENTS.c.version)
)
"""A stream's events after a version, built once: a statement object keeps its cache key,
which SQLAlchemy otherwise works out again at every lab step's read."""
_STREAM_AFTER_LIMITED = _STREAM_AFTER.limit(bindparam("limit"))


def _page(stream: bool, correlation: bool, types: bool) -> Any:
    """A page of the log after a position, narrowed by the filters that are given."""
    query = select(*_COLUMNS).where(EVENTS.c.position > bindparam("after"))
    if stream:
        query = query.where(EVENTS.c.stream == bindparam("stream"))
    if correlation:
        query = query.where(EVENTS.c.correlation_id == bindparam("correlation"))
    if types:
        query = query.where(EVENTS.c.type.in_(bindparam("types", expanding=True)))
    return query.order_by(EVENTS.c.position).limit(bindparam("limit", type_=Integer))


_PAGES = {given: _page(*given) for given in product((False, True), repeat=3)}
"""`read_records`' statements, one for each set of filters given (stream, correlation,
types), built once: a reactor reads a page at every catch-up."""


_INSERT_BLOBS = {name: insert_ignore(name, BLOBS, ["sha256"]) for name in ("sqlite", "postgresql")}
"""The blobs' insert by dialect, built once: nearly every append of a model call has blobs."""

_MAX_POSITION = select(func.max(EVENTS.c.position))
"""The log's last position, built once: a reactor looks at it after each short page."""

_HEAD = (
    select(EVENTS.c.version, EVENTS.c.type, EVENTS.c.recorded_at)
    .where(EVENTS.c.stream == bindparam("stream"))
    .order_by(EVENTS.c.version.desc())
    .limit(1)
)
"""A stream's last event's envelope, no payload: one probe of the (stream, version) index."""
_VERSION_TYPE = _HEAD.with_only_columns(EVENTS.c.version, EVENTS.c.type)
"""A stream's last version and its event's type, built once: what `stream_head` reads."""
_LAST = _HEAD.with_only_columns(*_COLUMNS)
"""A stream's last event, built once (`last_record`)."""
_STREAM_VERSION = select(func.max(EVENTS.c.version)).where(EVENTS.c.stream == bindparam("stream"))
"""A stream's last version, built once: the recorder reads it after a refused append."""
_BY_ID = select(*_COLUMNS).where(EVENTS.c.id == bindparam("id"))
"""One event by id, built once (`get`)."""
_BLOB = select(BLOBS.c.data).where(BLOBS.c.sha256 == bindparam("sha256"))
"""A blob's content, built once: the llm policy reads its context's blobs at every step."""


def _heads_pg() -> Any:
    """PostgreSQL: the heads of an array of streams in one statement (a lateral probe of
    the index per stream, as `_reserve_pg` does)."""
    names = func.unnest(bindparam("streams", type_=ARRAY(String)))
    wanted = names.table_valued("stream").render_derived(name="wanted")
    head = (
        select(EVENTS.c.version, EVENTS.c.type, EVENTS.c.recorded_at)
        .where(EVENTS.c.stream == wanted.c.stream)
        .order_by(EVENTS.c.version.desc())
        .limit(1)
        .lateral("head")
    )
    return select(wanted.c.stream, head.c.version, head.c.type, head.c.recorded_at).select_from(
        wanted.join(head, true())
    )


_HEADS_PG = _heads_pg()


_DAMAGED = (
    select(EVENTS.c.position, EVENTS.c.stream, EVENTS.c.type)
    .where(func.json_valid(EVENTS.c.payload) == 0)
    .order_by(EVENTS.c.position)
    .limit(1)
)
"""SQLite: the first event whose payload is not JSON (`first_damaged`)."""


@dataclass(frozen=True)
class Damaged:
    """An event the log holds whose payload cannot be read."""

    position: int
    stream: str
    type: str

    def __str__(self) -> str:
        return (
            f"the log's event at position {self.position} ({self.stream}, {self.type}) is "
            "damaged: its payload is not JSON, and every command that reads it fails until "
            "it is mended or removed"
        )


@dataclass(frozen=True)
class StreamHead:
    """A stream's last event, as far as its envelope says: what the reaper and a watcher
    waiting for runs to finish look at, read without the payload."""

    version: int
    type: str
    recorded_at: datetime


@dataclass(frozen=True)
class Diverged:
    """A stream's events in a batch that the log partly holds already: a second take of
    a step (taken twice: a redelivery, the reaper) that came out differently from the
    first, recorded one (a grader that timed out once, a budget's clock, the archive read
    later). Appending its new events after the first take's would splice two takes into
    one trajectory, or conflict with the step after it, so none of them is appended."""

    stream: str
    sent: tuple[int, int]
    """The first and last version of the take's events in the batch."""
    events: int
    """How many events of the stream the batch held."""
    stored: int
    """How many of them the log held (same ids: the versions the two takes share)."""


@dataclass(frozen=True)
class AppendResult:
    """What an append did: the events it wrote (with positions) and how many it skipped."""

    appended: list[Event]
    """Newly stored events, in position order, with `position` and `recorded_at` set."""
    skipped: int
    """Events whose id was already stored (a redelivery), and those of a diverged take:
    left as they were."""
    diverged: tuple[Diverged, ...] = ()
    """Streams whose events in the batch were partly stored already: none appended."""


class Filters(TypedDict, total=False):
    """What narrows a read of the log beyond its positions."""

    stream: str | None
    """One stream's events only."""
    types: Sequence[str] | None
    """Events of these types only."""
    correlation: str | None
    """Events of this correlation id only (a campaign's events)."""


@dataclass(frozen=True)
class DeadLetter:
    """A rejected message or event, with the reason it was rejected."""

    id: int
    received_at: datetime
    reason: str
    raw: str
    event_id: str | None
    stream: str | None


class EventStore:
    """The append-only log on one database; the only writer is the recorder."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def from_url(cls, url: str, create: bool = True, **engine: Any) -> "EventStore":
        """A store on `url`, creating the log's tables if they are missing (`engine`:
        options for `make_engine`)."""
        store = cls(make_engine(url, **engine))
        if create:
            store.create_schema()
        return store

    def create_schema(self) -> None:
        """Create the log's tables (idempotent)."""
        create_tables(self.engine, LOG_TABLES)

    # -- writing ---------------------------------------------------------------

    def append(
        self, events: Sequence[Event], blobs: Mapping[str, bytes] | None = None
    ) -> AppendResult:
        """Append `events` (and the blobs they reference) in one transaction."""
        blobs = blobs or {}
        for key, data in blobs.items():
            if digest(data) != key:
                raise BlobMismatch(f"blob sent as {key} hashes to {digest(data)}")
        unique = list({event.id: event for event in reversed(events)}.values())[::-1]
        # Serialized from the validated payloads (defaults filled, values normalized),
        # never the producer's raw JSON, and before the transaction: on SQLite it holds
        # the one writer lock of every process.
        bodies = {e.id: e.payload.model_dump_json() for e in unique}
        fresh: list[Event] = []
        diverged: tuple[Diverged, ...] = ()
        positions: list[int] = []
        with self.engine.connect().execution_options(**WRITER_OPTIONS) as conn:
            with conn.begin():
                if unique:
                    reserve = _reserve_pg if conn.dialect.name == "postgresql" else _reserve_sqlite
                    taken = reserve(conn, unique)
                    fresh = [e for e in unique if e.id not in taken.stored]
                    if taken.stored and fresh:
                        fresh, diverged = _whole_takes(unique, taken.stored)
                    _check_versions(fresh, taken.versions, taken.ended)
                now = utcnow()
                if fresh:
                    positions = taken.positions[: len(fresh)]
                    _insert(conn, fresh, positions, now, bodies)
                if blobs:
                    self._insert_blobs(conn, blobs)
        appended = [
            e.model_copy(update={"position": p, "recorded_at": now})
            for e, p in zip(fresh, positions, strict=True)
        ]
        return AppendResult(
            appended=appended, skipped=len(events) - len(appended), diverged=diverged
        )

    def _insert_blobs(self, conn: Any, blobs: Mapping[str, bytes]) -> None:
        rows = [{"sha256": k, "size": len(v), "data": v} for k, v in blobs.items()]
        conn.execute(_INSERT_BLOBS[conn.dialect.name], rows)

    def dead_letter(
        self, reason: str, raw: str, event_id: str | None = None, stream: str | None = None
    ) -> None:
        """Keep something the recorder rejected, with the reason, for a person to look at.

        NUL characters are written as `\\x00` and lone surrogates as `\\ud800`:
        PostgreSQL text cannot hold a NUL, neither database a lone surrogate (text that
        is not Unicode, e.g. from a producer's JSON escape), and a dead letter must
        never fail to be kept; `event_id` and `stream` are cut to fit their columns.
        """
        reason, raw = storable(reason), storable(raw)
        # Cut after the escapes, which lengthen: the columns are bounded.
        event_id = event_id and storable(event_id)[: text_limit(DEAD.c.event_id)]
        stream = stream and storable(stream)[: text_limit(DEAD.c.stream)]
        with writing(self.engine) as conn:
            conn.execute(
                insert(DEAD).values(
                    received_at=utcnow(), reason=reason, raw=raw, event_id=event_id, stream=stream
                )
            )

    # -- reading ---------------------------------------------------------------

    def read_records(
        self,
        after: int = 0,
        limit: int = 1000,
        stream: str | None = None,
        types: Sequence[str] | None = None,
        correlation: str | None = None,
    ) -> list[Recorded]:
        """Stored events with position > `after`, in position order, at most `limit`.

        `stream`, `types` and `correlation` narrow the read to one stream, to some event
        types and to one correlation id (a campaign's events).
        """
        values: dict[str, object] = {"after": after, "limit": limit}
        if stream is not None:
            values["stream"] = stream
        if correlation is not None:
            values["correlation"] = correlation
        if types is not None:
            values["types"] = list(types)
        query = _PAGES[stream is not None, correlation is not None, types is not None]
        with self.engine.connect() as conn, gc_paused():  # a page lives until it is used
            return rows_to_records(conn.execute(query, values).all())

    def read(self, after: int = 0, limit: int = 1000, stream: str | None = None) -> list[Event]:
        """Like `read_records`, as validated `Event`s with typed payloads."""
        return [r.typed() for r in self.read_records(after, limit, stream)]

    def iter_records(
        self, after: int = 0, page: int = 5000, **filters: Unpack[Filters]
    ) -> Iterator[Recorded]:
        """Every stored event after `after`, page by page: memory stays bounded by `page`.

        `filters` narrow it as they narrow `read_records`."""
        while True:
            batch = self.read_records(after, page, **filters)
            if not batch:
                return
            yield from batch
            after = batch[-1].position

    def read_stream(
        self, stream: str, after_version: int = -1, limit: int | None = None
    ) -> list[Event]:
        """A stream's events in version order (the first `limit` of them, if given)."""
        values: dict[str, object] = {"stream": stream, "after": after_version}
        query = _STREAM_AFTER
        if limit is not None:
            query, values["limit"] = _STREAM_AFTER_LIMITED, limit
        with self.engine.connect() as conn:
            return [r.typed() for r in rows_to_records(conn.execute(query, values).all())]

    def last_record(self, stream: str) -> Recorded | None:
        """A stream's latest event, None when it has none."""
        with self.engine.connect() as conn:
            rows = rows_to_records(conn.execute(_LAST, {"stream": stream}).all())
        return rows[0] if rows else None

    def stream_head(self, stream: str) -> tuple[int, str] | None:
        """A stream's last version and the type of its event there; None when it has none
        (one probe of the stream's index, nothing parsed: what a waiting writer polls)."""
        with self.engine.connect() as conn:
            row = conn.execute(_VERSION_TYPE, {"stream": stream}).first()
        return None if row is None else (int(row[0]), str(row[1]))

    def stream_heads(self, streams: Iterable[str]) -> dict[str, StreamHead]:
        """The head of each of `streams` that has events (those with none are left out),
        read in one statement on PostgreSQL and on one connection on SQLite, payloads
        never read."""
        names = list(dict.fromkeys(streams))
        heads: dict[str, StreamHead] = {}
        if not names:
            return heads
        with self.engine.connect() as conn:
            rows: list[Sequence[Any]]
            if conn.dialect.name == "postgresql":
                rows = list(conn.execute(_HEADS_PG, {"streams": names}).all())
            else:
                found = ((name, conn.execute(_HEAD, {"stream": name}).first()) for name in names)
                rows = [(name, *row) for name, row in found if row is not None]
        for name, version, kind, at in rows:
            heads[name] = StreamHead(int(version), str(kind), as_utc(at))
        return heads

    def stream_version(self, stream: str) -> int:
        """The last version of `stream`, -1 when it has no events."""
        with self.engine.connect() as conn:
            value = conn.execute(_STREAM_VERSION, {"stream": stream}).scalar()
        return -1 if value is None else int(value)

    def get(self, event_id: uuid.UUID) -> Event | None:
        """One event by id."""
        with self.engine.connect() as conn:
            rows = conn.execute(_BY_ID, {"id": event_id}).all()
        return rows_to_records(rows)[0].typed() if rows else None

    def max_position(self) -> int:
        """The highest position stored, 0 for an empty log."""
        with self.engine.connect() as conn:
            return int(conn.execute(_MAX_POSITION).scalar() or 0)

    def first_damaged(self) -> "Damaged | None":
        """The first event whose stored payload is not JSON (a hand edit, a damaged disk),
        None when there is none. Only SQLite can hold one: PostgreSQL's `jsonb` column
        takes nothing else. A scan of the whole log (~1 µs an event)."""
        if self.engine.dialect.name != "sqlite":
            return None
        with self.engine.connect() as conn:
            row = conn.execute(_DAMAGED).first()
        return None if row is None else Damaged(int(row[0]), str(row[1]), str(row[2]))

    def count(self) -> int:
        """How many events the log holds."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(EVENTS)).scalar() or 0)

    def get_blob(self, sha256: str) -> bytes | None:
        """A blob's content by its hash."""
        with self.engine.connect() as conn:
            return conn.execute(_BLOB, {"sha256": sha256}).scalar()

    def dead_letters(self, limit: int = 50) -> list[DeadLetter]:
        """The most recent dead letters, newest first."""
        query = select(DEAD).order_by(DEAD.c.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            return [
                DeadLetter(**{**row, "received_at": as_utc(row["received_at"])})
                for row in conn.execute(query).mappings()
            ]

    def dead_letter_count(self) -> int:
        """How many dead letters there are."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(DEAD)).scalar() or 0)


_INSERT_COLUMNS = (
    "position, id, stream, version, type, schema_version, occurred_at, recorded_at, "
    "causation_id, correlation_id, actor, payload"
)


@dataclass(frozen=True)
class _Reservation:
    """What an appender learns under the append lock, before it writes."""

    stored: set[uuid.UUID]
    """Ids of the batch already in the log (a redelivery): skipped."""
    versions: dict[str, int]
    """The last stored version of each stream of the batch that has any."""
    ended: set[str]
    """The streams of the batch whose last stored event ends them (`ENDS`)."""
    positions: list[int]
    """Fresh positions, increasing, at least one per event not yet stored."""


def _reserve_pg(conn: Any, events: list[Event]) -> _Reservation:
    """PostgreSQL: take the append lock and learn what to write, in one round trip.

    Pipelined: the lock, the stored ids, the streams' versions and the positions went
    as five round trips a batch, which a busy 2-core machine made cost more than the
    COPY. Positions are drawn from the events sequence for every event of the batch;
    those of skipped events are not used (positions may have gaps: a rolled-back
    append leaves one too). Under the lock nobody else inserts, so positions still
    commit in order.
    """
    driver = conn.connection.driver_connection
    with driver.pipeline():
        # The lock of `events.engines.lock_for_append`, sent with the reads it guards.
        driver.execute("LOCK TABLE events IN EXCLUSIVE MODE")
        # Array parameters: an IN list of 500 parameters cost ~7 ms a batch (psycopg
        # does not cache the conversion of statements that long).
        stored = driver.execute(
            "SELECT id FROM events WHERE id = ANY(%s)", ([e.id for e in events],)
        )
        # One index probe per stream: `stream IN (…) GROUP BY stream` let the planner
        # pick a sequential scan on stale statistics (26 ms a batch at 50k events).
        versions = driver.execute(
            "SELECT s.stream, e.version, e.type FROM unnest(%s::text[]) AS s(stream)"
            " LEFT JOIN LATERAL (SELECT version, type FROM events WHERE stream = s.stream"
            " ORDER BY version DESC LIMIT 1) e ON true",
            (list({e.stream for e in events}),),
        )
        positions = driver.execute(
            "SELECT nextval(pg_get_serial_sequence('events', 'position'))"
            " FROM generate_series(1, %s)",
            (len(events),),
        )
    heads = [row for row in versions.fetchall() if row[1] is not None]
    return _Reservation(
        stored={row[0] for row in stored.fetchall()},
        versions={stream: version for stream, version, _ in heads},
        ended={stream for stream, _, kind in heads if kind in ENDS},
        positions=sorted(row[0] for row in positions.fetchall()),
    )


def _reserve_sqlite(conn: Any, events: list[Event]) -> _Reservation:
    """SQLite: the connection began IMMEDIATE (the single writer); learn what to write."""
    lock_for_append(conn)
    cursor = conn.connection.driver_connection.cursor()
    stored: set[uuid.UUID] = set()
    for chunk in _chunks([e.id.hex for e in events], 500):
        marks = ",".join("?" * len(chunk))
        cursor.execute(f"SELECT id FROM events WHERE id IN ({marks})", chunk)
        stored.update(uuid.UUID(hex=row[0]) for row in cursor)
    versions: dict[str, int] = {}
    ended: set[str] = set()
    for stream in {e.stream for e in events}:
        # One probe of the (stream, version) index a stream: `max(version) … GROUP BY`
        # read every row of the stream (6 ms at 50k events, 21 ms with its type).
        cursor.execute(
            "SELECT version, type FROM events WHERE stream = ? ORDER BY version DESC LIMIT 1",
            (stream,),
        )
        head = cursor.fetchone()
        if head is not None:
            versions[stream] = head[0]
            if head[1] in ENDS:
                ended.add(stream)
    before = cursor.execute("SELECT max(position) FROM events").fetchone()[0] or 0
    positions = list(range(before + 1, before + 1 + len(events)))
    return _Reservation(stored, versions, ended, positions)


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _whole_takes(
    events: list[Event], stored: set[uuid.UUID]
) -> tuple[list[Event], tuple[Diverged, ...]]:
    """The events to append: those not stored, of the streams none of whose events in the
    batch is stored; and the streams of which some are and some are not (`Diverged`)."""
    by_stream: dict[str, list[Event]] = {}
    for event in events:
        by_stream.setdefault(event.stream, []).append(event)
    diverged = []
    for stream, take in by_stream.items():
        held = sum(e.id in stored for e in take)
        if 0 < held < len(take):
            versions = [e.version for e in take]
            diverged.append(Diverged(stream, (min(versions), max(versions)), len(take), held))
    apart = {d.stream for d in diverged}
    fresh = [e for e in events if e.id not in stored and e.stream not in apart]
    return fresh, tuple(diverged)


def _check_versions(fresh: list[Event], current: Mapping[str, int], ended: set[str]) -> None:
    """Each stream must continue from its stored version with no gap, or it conflicts;
    a stream that ended (stored, or earlier in the batch) takes nothing more."""
    by_stream: dict[str, list[Event]] = {}
    for event in fresh:
        by_stream.setdefault(event.stream, []).append(event)
    for stream, events in by_stream.items():
        if stream in ended:
            raise StreamEnded(
                f"stream {stream} ended at version {current[stream]}: it takes no more "
                f"events (version {events[0].version} sent)"
            )
        expected = current.get(stream, -1) + 1
        for index, event in enumerate(events):
            if event.version != expected:
                raise ConflictError(
                    f"stream {stream}: expected version {expected}, got {event.version} "
                    f"(stream is at {expected - 1}; the producer is stale or skipped one)"
                )
            if event.payload.type in ENDS and index + 1 < len(events):
                raise StreamEnded(
                    f"stream {stream} ends at version {event.version} in this batch: it "
                    f"takes no more events (version {event.version + 1} sent after it)"
                )
            expected += 1


def _insert(
    conn: Any,
    fresh: list[Event],
    positions: list[int],
    now: datetime,
    bodies: Mapping[uuid.UUID, str],
) -> None:
    # Positions are chosen before the rows go in and written with them, so no
    # read-back is needed (it cost as much as the COPY itself).
    rows = [
        (
            e.id,
            e.stream,
            e.version,
            e.payload.type,
            e.schema_version,
            e.occurred_at,
            now,
            e.causation_id,
            e.correlation_id,
            e.actor,
            bodies[e.id],
        )
        for e in fresh
    ]
    if conn.dialect.name == "postgresql":
        _copy_rows(conn, positions, rows)
    else:
        _executemany_rows(conn, positions, rows)


def _copy_rows(conn: Any, positions: list[int], rows: list[tuple[Any, ...]]) -> None:
    """PostgreSQL: COPY is the fastest way in (about twice batched INSERT)."""
    cursor = conn.connection.driver_connection.cursor()
    with cursor.copy(f"COPY events ({_INSERT_COLUMNS}) FROM STDIN") as copy:
        for position, row in zip(positions, rows, strict=True):
            copy.write_row((position, *row))


def _executemany_rows(conn: Any, positions: list[int], rows: list[tuple[Any, ...]]) -> None:
    """SQLite: one prepared statement run for every row."""
    cursor = conn.connection.driver_connection.cursor()
    cursor.executemany(
        f"INSERT INTO events ({_INSERT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            (
                position,
                row[0].hex,
                *row[1:5],
                _sqlite_time(row[5]),
                _sqlite_time(row[6]),
                row[7].hex if row[7] else None,
                *row[8:],
            )
            for position, row in zip(positions, rows, strict=True)
        ],
    )


def _sqlite_time(moment: datetime) -> str:
    """The text form SQLAlchemy's SQLite DateTime reads back (UTC, no offset)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


_as_record = tuple.__new__


def rows_to_records(rows: Iterable[Sequence[Any]]) -> list[Recorded]:
    """Stored rows (in `_COLUMNS` order) to records, upgrading old payload shapes."""
    records: list[Recorded] = []
    append = records.append
    # Each known type's current shape, looked up once a page; unknown types pass as stored.
    current = {name: cls.SCHEMA_VERSION for name, cls in BY_TYPE.items()}
    for row in rows:
        # A row of today's shape with aware times (PostgreSQL's rows, a tuple in the
        # record's order) becomes the record as it is: `tuple.__new__`, not the named
        # tuple's `__new__` (a Python function of twelve arguments), ~0.3 µs an event of
        # a rebuild's ~0.8 here (bench/rebuild.py).
        if (
            type(row) is tuple
            and row[5] == current.get(row[4], row[5])
            and row[6].tzinfo is not None
            and row[7].tzinfo is not None
        ):
            append(_as_record(Recorded, row))
            continue
        # Any other row (SQLite's: naive times; or a payload of an older shape): the
        # same columns, those that need it mended.
        columns = list(row)
        if columns[5] != current.get(columns[4], columns[5]):
            upgraded = upgrade({"schema_version": columns[5], "payload": columns[11]})
            columns[11], columns[5] = upgraded["payload"], upgraded["schema_version"]
        for at in (6, 7):
            if columns[at].tzinfo is None:
                columns[at] = as_utc(columns[at])
        append(_as_record(Recorded, columns))
    return records
