"""Step leases: a step being taken says so, so no one else takes it meanwhile.

The reaper sends a run's step again when the run has had no event for a while (its
step message was lost: Redis restarted empty, a worker killed). A step may rightly take
minutes (a grader has up to its card's `timeout_seconds`, a model call up to the
gateway's timeout), and sending it again while it runs would have two workers take
it at once. So a worker taking a step holds a lease on the run, renewed every third
of its time to live while the step runs; the reaper sends again only the steps of
runs with no live lease. A worker that dies stops renewing: its lease runs out within
`ttl` seconds, and the run is reaped. An upsert a step (an update more where it ends
having sent nothing or raised), and one update per `ttl / 3` for all of a process's
long steps.

A lease is exclusive: each take holds it under a token of its own, and a take that
finds the same step's lease held by another (a step sent twice: the reactor sending a
reaction again after a crash, kombu bringing a message back from a worker it thought
dead) does not run it beside the first, in the same workspace, but waits for the
lease (`Held`, with the time it has left). When it comes back, the step is taken (the
run moved on: it does nothing), still being taken (it waits again), or its taker died
(the lease ran out: it takes it): a worker's death costs its step up to `ttl` before
another worker takes it over.

How a take ends says what its lease still guards:
- it raised: given back (it published nothing: its retry takes the step at once);
- it sent its events: left held by its token to run out (no write: one less
  transaction a step), so the reaper leaves the run alone between the publish and the
  recorder's append; a later take of the same step in this process finds the step done
  (`Taken`: the process remembers the token of its last sent take of each run) and
  does nothing at once (waiting for the lease,
  it would hold up the very recording it waits for where both share a thread: the
  embedded bus); elsewhere it waits for the lease as for a running take, and finds the
  run moved on. A take that finds a later step's lease finds its own step done (`Taken`).
  Once the lease has run out, a take of the step takes it again: that is how events lost
  on their way (Redis restarted empty) are made again;
- it sent nothing (`Take.sent_nothing`: a run waiting for its paper's decision, whose
  wake-up is the same step again): marked `IDLE` and left to run out, so the reaper
  leaves the waiting run alone as long as after any step, but a take of the same step
  takes it at once (the wake-up waited out the whole lease: 30 s a review round).
"""

import functools
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Engine,
    MetaData,
    String,
    Table,
    and_,
    bindparam,
    delete,
    event,
    inspect,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.pool import QueuePool
from sqlalchemy.sql.expression import BindParameter, Executable

from events import EventStore
from events.bounded_cache import BoundedCache
from events.engines import make_engine, sqlite_file, writing
from events.envelope import as_utc
from events.ids import utcnow
from events.schema import create_tables, schema_transaction
from events.upsert import upsert
from workers.errors import WorkerError
from workers.retry import is_transient

log = logging.getLogger(__name__)

STEP_LEASES = Table(
    "step_leases",
    MetaData(),
    Column("stream", String(200), primary_key=True),
    Column("version", BigInteger, nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("holder", String(32)),
)
"""Per run: the step being taken (the version it follows), until when it is held, and by
which take (a token; none in a table an older labrxiv wrote: added when missing)."""


class Held(WorkerError):
    """Another take holds the lease on this step; it runs out in `left` seconds unless
    renewed."""

    def __init__(self, stream: str, version: int, left: float) -> None:
        super().__init__(
            f"the step of {stream} after version {version} is being taken elsewhere "
            f"(its lease has {left:.1f}s left)"
        )
        self.left = left


SENT = "sent"
"""The holder of a lease whose take ended after sending its events, as an older labrxiv
marked it (a take now leaves its own token there: `Leases._sent`)."""
IDLE = "idle"
"""The holder of a lease whose take ended having sent nothing: free to the same step."""
SESSION = "@"
"""How the token of a session's take begins (`Leases.holding(..., session=True)`): a
take that sends the run's events itself while it runs (an agent's process), moving its
lease to each version it sends. Another take of any of those steps finds the run's step
taken (`Taken`): the session goes on with the run, and should it die, its lease runs out
and the reaper sends the step again. A take in the process running the session leaves
it its run even then: there, a lease that ran out means renewals came late on a starved
machine, not a death. A take elsewhere that takes it over tells the session, through its
renewals' failure (`Take.on_lost`), to stop its agent at once."""


SENT_KEPT = 4096
"""How many runs' last sent takes a process remembers (the least recently used
forgotten)."""


class LeaseLost(WorkerError):
    """A session's lease ran out and another take has the run: the session stops."""

    def __init__(self, stream: str, version: int) -> None:
        super().__init__(
            f"the session of {stream} lost its lease before version {version}: another "
            "take has the run"
        )


class Taken(WorkerError):
    """This step was taken already and its events sent: nothing is left to do."""

    def __init__(self, stream: str, version: int) -> None:
        super().__init__(f"the step of {stream} after version {version} was taken already")


class Take:
    """A take holding a step's lease (what `Leases.holding` gives its block)."""

    def __init__(self, leases: "Leases | None" = None, stream: str = "", token: str = "") -> None:
        self.idle = False
        self._leases = leases
        self._stream = stream
        self._token = token
        self._lost: list[Callable[[], None]] = []
        self._lost_lock = threading.Lock()
        self._is_lost = False

    def on_lost(self, said: Callable[[], None]) -> None:
        """Call `said` (on the renewing thread) once the lease is found taken by another
        take: what the take runs must stop at once, not at its next send. Called at once
        if that is known already."""
        with self._lost_lock:
            if not self._is_lost:
                self._lost.append(said)
                return
        said()

    def lost(self) -> None:
        """The renewing thread found the lease taken by another take."""
        with self._lost_lock:
            self._is_lost, said = True, list(self._lost)
            self._lost.clear()
        for callback in said:
            try:
                callback()
            except Exception:  # noqa: BLE001 - the renewals go on for the other takes
                log.exception("%s: stopping a take that lost its lease failed", self._stream)

    def moved_to(self, version: int) -> None:
        """Say the take is sending the run's events up to `version` (a session): its lease
        is now on the step after it, so the reaper leaves the run alone while it runs.
        `LeaseLost` when the take no longer holds it (it ran out in a stall longer than
        its time to live, and another take has the run): nothing must be sent then."""
        self.idle = False
        if self._leases is not None and not self._leases.move(self._stream, self._token, version):
            raise LeaseLost(self._stream, version)

    def sent_nothing(self) -> None:
        """Say the take published nothing: there is nothing in flight for the lease to
        cover, so the step is free to its next take at once (`IDLE`)."""
        self.idle = True


@dataclass(frozen=True)
class _Held:
    """A take holding its lease: which step, and when its lease is next renewed."""

    stream: str
    version: int
    due: float
    """`time.monotonic()` at which to renew it."""
    take: Take


_HELD = select(STEP_LEASES.c.holder, STEP_LEASES.c.version, STEP_LEASES.c.expires_at).where(
    STEP_LEASES.c.stream == bindparam("stream")
)
"""A run's lease: its holder, the version its step follows, until when it is held."""

_MINE = and_(STEP_LEASES.c.stream == bindparam("run"), STEP_LEASES.c.holder == bindparam("token"))
"""A run's lease (`run`) if `token` holds it (bound under names no column has: an
update reserves its columns' names)."""
_MOVE = update(STEP_LEASES).where(_MINE).values(version=bindparam("to"))
_GIVE_BACK = delete(STEP_LEASES).where(_MINE)
_MARK = update(STEP_LEASES).where(_MINE).values(holder=bindparam("how"))


@functools.cache
def _take_statement(dialect: str) -> Executable:
    """The take's conditional upsert for `dialect`, built once (a statement object keeps
    its cache key, which SQLAlchemy otherwise works out again at every step): the stored
    lease is replaced where it ran out (`now`), is of an earlier step, is an idle take's
    of this step or has no holder, and is not held by one of this process's running
    sessions (`alive`, a list)."""
    stored = STEP_LEASES.c
    version: BindParameter[int] = bindparam("version")
    free = or_(
        stored.expires_at <= bindparam("now"),
        stored.version < version,  # the run's previous step's
        and_(stored.holder == IDLE, stored.version == version),
        stored.holder.is_(None),
    )
    # this process's own sessions run: a late renewal is not a death
    free = and_(
        free,
        or_(stored.holder.is_(None), stored.holder.not_in(bindparam("alive", expanding=True))),
    )
    row: dict[str, BindParameter[Any]] = {
        name: bindparam(name) for name in ("stream", "version", "expires_at", "holder")
    }
    return upsert(dialect, STEP_LEASES, row, where=free)


class Leases:
    """Leases on runs' steps, shared by every worker: in the log's database, or beside a
    SQLite log (`lease_engine`)."""

    def __init__(self, store: EventStore, ttl: float = 30.0) -> None:
        self.engine = lease_engine(store)
        self.ttl = ttl
        self._ready = False
        self._held: dict[str, _Held] = {}
        """The takes of this process holding their lease, by token."""
        self._changed = threading.Condition()
        self._renewer: threading.Thread | None = None
        self._sent: BoundedCache[str, str] = BoundedCache(SENT_KEPT)
        """Per run, the token of this process's last take of it that ended sending its
        events: the lease that token still holds, left to run out, says its step is
        done (forgotten past `SENT_KEPT` runs: a later take then waits for the lease)."""

    @contextmanager
    def holding(self, stream: str, version: int, session: bool = False) -> Iterator[Take]:
        """Hold the lease on `stream`'s step after `version` while the block runs; raises
        `Held` if another take holds it, `Taken` if a take of this process (or an older
        labrxiv's, `SENT`) took it and sent its events, a session holds the run
        (`SESSION`) or the run's lease is on a later step. Given
        back if the block raises; marked `IDLE` if it says it sent nothing
        (`Take.sent_nothing`), else left to run out.
        `session`: the block sends the run's events itself (`Take.moved_to`)."""
        token = (SESSION + uuid.uuid4().hex[1:]) if session else uuid.uuid4().hex
        holder, held_version, left = self._take(stream, version, token)
        if holder != token and (
            holder in (SENT, self._sent.get(stream))
            or (holder or "").startswith(SESSION)
            or held_version > version
        ):
            raise Taken(stream, version)
        if holder != token:
            raise Held(stream, version, left)
        take = Take(self, stream, token)
        self._hold(token, _Held(stream, version, time.monotonic() + self.ttl / 3, take))
        raised = False
        try:
            yield take
        except BaseException:
            raised = True
            raise
        finally:
            with self._changed:
                self._held.pop(token, None)
            # A renewal still on its way after this end moves the end of the lease a sent
            # take left to run out (the reaper waits a little longer); after a given-back
            # or idle end it changes nothing: `token` holds no lease then.
            if raised or take.idle:
                self._end(stream, token, None if raised else IDLE)
            else:
                self._sent.put(stream, token)

    def _hold(self, token: str, held: _Held) -> None:
        """Renew `token`'s lease every third of its time to live until it is let go. One
        thread renews every lease of this process: a thread a take (started and joined at
        every step) cost about 0.5 ms of an embedded llm lab's ~12 ms of CPU a model call."""
        with self._changed:
            self._held[token] = held
            if self._renewer is None:
                self._renewer = threading.Thread(
                    target=self._renew_held, name="step leases", daemon=True
                )
                self._renewer.start()
            self._changed.notify()

    def _renew_held(self) -> None:
        """The renewing thread: renews each held lease when it is due, until the process
        ends. A renewal that fails is tried again sooner; a lease found taken by another
        (it ran out while its step ran) is said and no longer renewed."""
        while True:
            with self._changed:
                due = self._due()
                while not due:
                    soonest = min((h.due for h in self._held.values()), default=None)
                    self._changed.wait(None if soonest is None else soonest - time.monotonic())
                    due = self._due()
            self._renew_due(dict(due))

    def _due(self) -> list[tuple[str, _Held]]:
        now = time.monotonic()
        return [(token, held) for token, held in self._held.items() if held.due <= now]

    def _renew_due(self, due: dict[str, _Held]) -> None:
        """Renew the leases `due` in one write (a renewal a lease, each waiting its turn
        for SQLite's writer, fell behind by more than a lease's life with 50 agent labs
        on two cores)."""
        wait = self.ttl / 3
        try:
            still = self._renew({token: held.stream for token, held in due.items()})
        except Exception as exc:  # noqa: BLE001 - the database away: try again sooner
            streams = ", ".join(sorted(held.stream for held in due.values()))
            log.warning("%s: the steps' leases were not renewed (%s); trying again", streams, exc)
            still, wait = set(due), self.ttl / 10
        lost = []
        with self._changed:
            for token, held in due.items():
                if token not in self._held:
                    continue  # let go meanwhile
                if token in still:
                    self._held[token] = replace(held, due=time.monotonic() + wait)
                else:
                    del self._held[token]
                    lost.append(held)
        for held in lost:  # it ran out and another take has it: say so, and stop it
            log.warning(
                "%s: the lease on the step after version %d ran out while it ran and "
                "was taken by another worker (a stall longer than %.0fs)",
                held.stream,
                held.version,
                self.ttl,
            )
            held.take.lost()

    def forget(self, streams: Iterable[str]) -> None:
        """Remove the leases of `streams`, whoever holds them: for a process that was the
        runs' only worker and has stopped taking steps (the embedded system at Ctrl-C),
        whose leases guard nothing any more (a sent one's events may have been dropped)."""
        self._ensure_table()
        wanted = sorted(set(streams))
        for stream in wanted:
            self._sent.pop(stream)
        if wanted:
            with writing(self.engine) as conn:
                conn.execute(delete(STEP_LEASES).where(STEP_LEASES.c.stream.in_(wanted)))

    def live(self, streams: Iterable[str], now: datetime | None = None) -> dict[str, int]:
        """The runs among `streams` whose step is held now: stream → the version it follows."""
        self._ensure_table()
        now = now or utcnow()
        wanted = sorted(set(streams))
        if not wanted:
            return {}
        query = select(STEP_LEASES.c.stream, STEP_LEASES.c.version, STEP_LEASES.c.expires_at)
        with self.engine.connect() as conn:
            rows = conn.execute(query.where(STEP_LEASES.c.stream.in_(wanted))).all()
        return {stream: version for stream, version, until in rows if as_utc(until) > now}

    def _take(self, stream: str, version: int, token: str) -> tuple[str | None, int, float]:
        """Take the lease for `token` unless another take holds the same step's; returns
        the lease's holder (`token` when taken), the version its step follows and the
        seconds it has left.

        One conditional upsert: the stored lease is replaced if it ran out, is of an
        earlier step (the run's previous one, left to run out), is an idle take's of this
        step or has no holder (an older labrxiv's); PostgreSQL decides it row-locked,
        SQLite under its writer lock. A live lease of a later step is kept: this take is
        stale (the run moved on meanwhile). A session this process runs keeps its lease
        even if it ran out: its renewals came late (a starved machine), it did not die.

        Expiry is each worker's clock (`utcnow`): workers are assumed to agree within a
        fraction of `ttl` (NTP), as the reaper already assumed."""
        self._ensure_table()
        now = utcnow()
        # `writing`: the upsert reads before it writes, and on SQLite a deferred transaction
        # failed at once with "database is locked" when the recorder committed in between
        # (tests/llm/test_llm_lab.py caught it).
        with self._changed:
            alive = sorted(t for t in self._held if t.startswith(SESSION))
        values = {
            "stream": stream,
            "version": version,
            "expires_at": now + timedelta(seconds=self.ttl),
            "holder": token,
            "now": now,
            "alive": alive,
        }
        with writing(self.engine) as conn:
            conn.execute(_take_statement(conn.dialect.name), values)
            holder, held_version, until = conn.execute(_HELD, {"stream": stream}).one()
        return holder, held_version, max(0.0, (as_utc(until) - now).total_seconds())

    def _renew(self, held: Mapping[str, str]) -> set[str]:
        """Move on the end of each lease `held` (token → stream) that its token still
        holds, in one transaction; returns the tokens that do."""
        until = utcnow() + timedelta(seconds=self.ttl)
        stored = STEP_LEASES.c
        tokens = sorted(held)
        with writing(self.engine) as conn:
            conn.execute(
                update(STEP_LEASES)
                .where(stored.holder.in_(tokens), stored.stream.in_(set(held.values())))
                .values(expires_at=until)
            )
            rows = conn.execute(
                select(stored.stream, stored.holder).where(stored.holder.in_(tokens))
            ).all()
        return {holder for stream, holder in rows if held.get(holder) == stream}

    def move(self, stream: str, token: str, version: int) -> bool:
        """Put `token`'s lease on the step after `version` (a session sends up to it);
        whether `token` still holds it."""
        with writing(self.engine) as conn:
            moved = conn.execute(_MOVE, {"run": stream, "token": token, "to": version})
            return bool(moved.rowcount)

    def _end(self, stream: str, token: str, how: str | None) -> None:
        """End `token`'s take, if it still holds the lease: given back (`how` None) or
        marked `IDLE`. Best effort: the database away (`is_transient`), the lease runs out (a later
        take of the step waits for that); any other failure is a defect and is raised."""
        try:
            with writing(self.engine) as conn:
                if how is None:
                    conn.execute(_GIVE_BACK, {"run": stream, "token": token})
                else:
                    conn.execute(_MARK, {"run": stream, "token": token, "how": how})
        except Exception as exc:
            if not is_transient(exc):
                raise
            log.warning("%s: the step's lease was not ended (%s)", stream, exc)

    def _ensure_table(self) -> None:
        if self._ready:
            return
        create_tables(self.engine, [STEP_LEASES])
        columns = {c["name"] for c in inspect(self.engine).get_columns(STEP_LEASES.name)}
        if "holder" not in columns:  # a table an older labrxiv made
            with schema_transaction(self.engine) as conn:
                columns = {c["name"] for c in inspect(conn).get_columns(STEP_LEASES.name)}
                if "holder" not in columns:
                    conn.execute(
                        text(f"ALTER TABLE {STEP_LEASES.name} ADD COLUMN holder VARCHAR(32)")
                    )
        self._ready = True


_ENGINES: "weakref.WeakKeyDictionary[Engine, Engine]" = weakref.WeakKeyDictionary()
_ENGINES_LOCK = threading.Lock()


def lease_engine(store: EventStore) -> Engine:
    """Where the leases are kept: the log's database, but for a SQLite file a file of
    their own beside it (`<log>-leases`, as many connections kept open as the log's,
    closed with the log's). A SQLite file has one writer: every step's lease take
    queued behind every lab's append there (and each append behind the takes), a median
    25 ms each with a hundred llm labs; in a file of their own they go on side by side.
    PostgreSQL writes rows at once: the leases stay in the log's database."""
    engine = store.engine
    path = sqlite_file(engine)
    if path is None:
        return engine
    with _ENGINES_LOCK:
        leases = _ENGINES.get(engine)
        if leases is None:
            kept = engine.pool.size() if isinstance(engine.pool, QueuePool) else 5
            leases = _ENGINES[engine] = make_engine(f"sqlite:///{path}-leases", pool_size=kept)
            event.listen(engine, "engine_disposed", lambda _engine: leases.dispose())
        return leases
