"""The research phase each run is in, as the ledger folds the log: what puts a tool call's
phase on its row (`labrxiv_actions_total{phase}`).

A run's phase is its last `phase.entered` (`llm` labs enter phases; other labs have none:
None). A fork starts in its parent's phase at the fork point. Runs whose start this
process saw are known; any other run (a projector started mid-run, a run that fell out of
the bounded memory) is looked up in the log once, before the page that needs it: its last
`phase.entered` before the page, a pure function of the log, so rebuilt equals
incremental.
"""

from collections.abc import Sequence

import orjson
from sqlalchemy import Connection, func, select

from events.bounded_cache import BoundedCache
from events.recorded import Recorded
from events.store import EVENTS

PHASE_TYPES = frozenset({"phase.entered", "run.started"})
"""The events that set a run's phase (a run's start: none yet, or its parent's)."""
PHASE_KEY = "@phase"
"""Where `tag` puts the phase in a `tool.invoked` payload (no payload field is named so)."""
KEPT_RUNS = 100_000
"""Runs whose phase is kept in memory, at most (least recently used let go)."""


class RunPhases:
    """Each run's phase, as far as the pages folded so far go."""

    def __init__(self, kept: int = KEPT_RUNS) -> None:
        self._phase: BoundedCache[str, str | None] = BoundedCache(kept)

    def prepare(self, conn: Connection, events: Sequence[Recorded]) -> None:
        """Look up, in one query, the runs whose tools the page invokes before anything
        in the page says their phase, and that are not known."""
        said: set[str] = set()
        unknown: set[str] = set()
        for event in events:
            if event.type in PHASE_TYPES:
                said.add(event.stream)
            elif (
                event.type == "tool.invoked"
                and event.stream not in said
                and event.stream not in self._phase
            ):
                unknown.add(event.stream)
        if unknown:
            found = _last_phases(conn, sorted(unknown), before=events[0].position)
            for run in unknown:
                self._set(run, found.get(run))

    def see(self, conn: Connection, event: Recorded) -> None:
        """Fold a `phase.entered` or `run.started` in."""
        if event.type == "phase.entered":
            self._set(event.stream, event.payload["phase"])
            return
        parent = event.payload.get("forked_from")
        if parent is None:
            self._set(event.stream, None)
            return
        found = _last_phases(conn, [parent["run"]], through_version=parent["version"])
        self._set(event.stream, found.get(parent["run"]))

    def tag(self, event: Recorded) -> Recorded:
        """`event` (a `tool.invoked`) with its run's phase under `PHASE_KEY`."""
        phase = self._phase.get(event.stream)  # known (a phase, or none yet): recently used
        return event._replace(payload={**event.payload, PHASE_KEY: phase})

    def _set(self, run: str, phase: str | None) -> None:
        self._phase.put(run, phase)


def _last_phases(
    conn: Connection,
    runs: list[str],
    before: int | None = None,
    through_version: int | None = None,
) -> dict[str, str]:
    """Each run's last `phase.entered` before a log position or through a version (runs
    without one are left out); a fork with none of its own, its parent's."""
    where = [EVENTS.c.stream.in_(runs), EVENTS.c.type == "phase.entered"]
    if before is not None:
        where.append(EVENTS.c.position < before)
    if through_version is not None:
        where.append(EVENTS.c.version <= through_version)
    last = (
        select(func.max(EVENTS.c.position).label("position"))
        .where(*where)
        .group_by(EVENTS.c.stream)
        .subquery()
    )
    rows = conn.execute(
        select(EVENTS.c.stream, EVENTS.c.payload).where(EVENTS.c.position.in_(select(last)))
    )
    found = {stream: _phase_of(payload) for stream, payload in rows}
    for run in set(runs) - found.keys():
        inherited = _fork_point(conn, run)
        if inherited is not None:
            parent, version = inherited
            theirs = _last_phases(conn, [parent], None, version)
            if parent in theirs:
                found[run] = theirs[parent]
    return found


def _fork_point(conn: Connection, run: str) -> tuple[str, int] | None:
    """The parent and version a run forked from, or None."""
    payload = conn.execute(
        select(EVENTS.c.payload).where(EVENTS.c.stream == run, EVENTS.c.version == 0)
    ).scalar()
    parent = _payload(payload).get("forked_from") if payload is not None else None
    if not isinstance(parent, dict) or not parent:
        return None
    return str(parent["run"]), int(parent["version"])


def _phase_of(payload: object) -> str:
    return str(_payload(payload)["phase"])


def _payload(payload: object) -> dict[str, object]:
    """A stored payload as a dict (PostgreSQL's JSONB arrives parsed, SQLite's as text)."""
    if isinstance(payload, dict):
        return payload
    parsed = orjson.loads(payload)  # type: ignore[arg-type]
    assert isinstance(parsed, dict)
    return parsed
