"""The reactor: what happens after an event is recorded, driven from the log.

A reaction (a run's next step, closing a finished campaign; later reviews and
analysis) is sent by a reader that tails the log by position with a checkpoint, as a
projector does, never by the recorder's success path alone. Each catch-up takes the
reactor's turn, reads the events after the checkpoint, sends their reactions and only
then moves the checkpoint. The turn is the checkpoint's row lock, in one transaction, on
PostgreSQL; on SQLite, where any write transaction holds the file's one writer lock, it
is a lock of its own (`events.engines.turn`) and the checkpoint moves in a short write at
the end. So:
- a crash anywhere between an append and a send loses nothing: the checkpoint has not
  moved past the event, and the next catch-up sends its reactions (a recorder killed
  ~20 ms after recording a batch does not lose the run's next step);
- a reaction sent twice (a crash after the send, before the commit) is harmless: every
  message is addressed by the event that caused it (a step by the version it follows,
  a campaign's end by an id derived from the campaign), so doing it again is a no-op.

Who catches up: the recorder, right after each append (the fast path: a step's next
step is sent within the same task); `labrxiv reactor`, which polls the log (the path
that survives a recorder killed between its append and its catch-up); and the
campaign watcher, each tick. The turn makes them go one after another.

A message lost inside the broker (Redis restarted empty) is beyond the log's reach:
`workers.lab.reaper` finds the runs it stalled and sends their step again.
"""

import logging
import threading
from collections.abc import Callable, Sequence

from sqlalchemy import Connection, MetaData, Table

from events import EventStore
from events.checkpoints import Checkpoints
from events.engines import turn, writing
from events.recorded import Recorded
from events.schema import create_tables
from workers.bus.base import Bus, BusStopped
from workers.retry import DEFAULT, RetryPolicy, keep_going

log = logging.getLogger(__name__)

Reaction = Callable[[EventStore, Bus, Sequence[Recorded]], None]
"""Sends what should happen after a page of recorded events; idempotent."""

REACTOR_CHECKPOINTS = Checkpoints("reactor_checkpoints", MetaData())
"""How far each reactor has sent the log's reactions: a table of its own, which neither
`labrxiv rebuild` nor the projectors' lag metrics touch."""


class Reactor:
    """Sends the reactions of every recorded event once in effect, from its checkpoint."""

    def __init__(
        self,
        store: EventStore,
        bus: Bus,
        reactions: Sequence[Reaction],
        name: str = "reactions",
        page: int = 1000,
    ) -> None:
        self.store = store
        self.bus = bus
        self.reactions = list(reactions)
        self.name = name
        self.page = page
        self._ready = False
        self._reached = 0
        """A position this reactor has seen its checkpoint at or past (it never moves back):
        an append at or before it needs no catch-up of its own."""
        self._poking = threading.Lock()
        """Pokes take turns here, not at the database's writer lock: one that waited for
        a neighbour's catch-up finds its event taken and begins nothing."""

    def catch_up(self, limit: int | None = None) -> int:
        """Send the reactions of the events after the checkpoint (at most about `limit`);
        returns how many events were reacted to."""
        self._ensure_table()
        done = 0
        while limit is None or done < limit:
            sent = self._one_page()
            done += sent
            if not sent or (sent < self.page and self.store.max_position() <= self._reached):
                # A short page ended at the head, unless events were appended meanwhile:
                # one look at the log's last position, not another page's turn,
                # checkpoint read and log read to find nothing.
                break
        return done

    def poke(self, upto: int | None = None) -> None:
        """Catch up now, best effort: for callers whose own work must not fail because a
        reaction could not be sent (the recorder). What is not sent now is sent by the
        next catch-up, the checkpoint not having moved. `upto`: the last position the
        caller appended; when this reactor has already moved its checkpoint there (another
        thread's catch-up took that event in its page), there is nothing to do, and no
        write transaction is begun for it: with a hundred labs in one process, most of
        their appends are reacted to by a neighbour's catch-up."""
        with self._poking:
            if upto is not None and upto <= self._reached:
                return
            try:
                self.catch_up()
            except BusStopped:
                pass  # stopping (Ctrl-C): nothing to warn of; a resume's catch-up sends them
            except Exception:  # noqa: BLE001 - the log keeps what was not sent
                log.warning("reactions not sent now; the next catch-up sends them", exc_info=True)

    def position(self) -> int:
        """The checkpoint: the last position whose reactions were sent."""
        self._ensure_table()
        with self.store.engine.connect() as conn:
            return REACTOR_CHECKPOINTS.read(conn, self.name)

    def _one_page(self) -> int:
        engine = self.store.engine
        if engine.dialect.name == "sqlite":
            # The reactors take turns at a lock of their own, not at the writer's: a page
            # read and sent inside a write transaction would keep every writer of every
            # process waiting meanwhile (a hundred llm labs' appends and step leases). The
            # checkpoint moves in a short write of its own.
            with turn(engine, f"reactor-{self.name}"):
                with engine.connect() as conn:
                    seen = REACTOR_CHECKPOINTS.read(conn, self.name)
                records = self._react_after(seen)
                if records:
                    with writing(engine) as conn:
                        self._advance(conn, seen, records)
        else:
            with writing(engine) as conn:
                seen = self._claim(conn)
                records = self._react_after(seen)
                if records:
                    self._advance(conn, seen, records)
        if records:
            self._reached = max(self._reached, records[-1].position)
        return len(records)

    def _react_after(self, seen: int) -> list[Recorded]:
        """Send the reactions of the page of events after `seen`; the page."""
        self._reached = max(self._reached, seen)
        records = self.store.read_records(seen, self.page)
        if records:
            for reaction in self.reactions:
                reaction(self.store, self.bus, records)
        return records

    def _advance(self, conn: Connection, seen: int, records: Sequence[Recorded]) -> None:
        if not REACTOR_CHECKPOINTS.advance(conn, [self.name], seen, records[-1].position):
            raise RuntimeError(f"reactor {self.name}'s checkpoint moved under its lock")

    def _claim(self, conn: Connection) -> int:
        """PostgreSQL: lock this reactor's checkpoint row (FOR UPDATE) until the transaction
        ends and return it, so reactors take turns and each sees where the one before it
        stopped."""
        REACTOR_CHECKPOINTS.ensure(conn, [self.name])
        return REACTOR_CHECKPOINTS.claim(conn, [self.name])[self.name]

    def _ensure_table(self) -> None:
        if not self._ready:
            create_table(self.store, REACTOR_CHECKPOINTS.table)
            with writing(self.store.engine) as conn:
                REACTOR_CHECKPOINTS.ensure(conn, [self.name])  # the row `_advance` moves
            self._ready = True


def create_table(store: EventStore, table: Table) -> bool:
    """Create `table` in the log's database unless it exists (`events.schema`: safe
    when several processes start at once). Returns True, for a caller's "ready" flag."""
    create_tables(store.engine, [table])
    return True


def run_reactor(
    reactor: Reactor,
    interval: float,
    tick: Callable[[], None] | None = None,
    stop: threading.Event | None = None,
    policy: RetryPolicy = DEFAULT,
) -> None:
    """`labrxiv reactor`: catch up every `interval` seconds until stopped, calling `tick`
    (the reaper) after each catch-up.

    A transient fault of the database or the broker (`workers.retry.is_transient`) is
    logged and tried again after the one retry policy's wait, for as long as it lasts;
    any other error is a bug in a reaction and stops the reactor, as it stops the
    campaign watcher: looping on it would hold every later reaction behind it silently.
    """

    def work() -> float:
        reactor.catch_up()
        if tick is not None:
            tick()
        return interval

    keep_going("reactor", work, stop or threading.Event(), policy)
