"""Running a campaign from the shell: start it, watch its labs live, wait for the end.

Works the same embedded (the local bus does the work in this process) and
distributed (workers on Redis do it; this process only publishes and watches the log).
The live table is the `runs` read model, not a fold of every run stream: each tick
the watcher catches up the runs projector alone (at its shared checkpoint, so a
`labrxiv projector` process beside it is safe: whichever moves the checkpoint first
applies a page, the other skips it) and reads the campaign stream's new events only.
"""

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TypedDict, Unpack

from rich.console import Console, RenderableType
from rich.live import Live
from rich.table import Table

from events import EventStore
from events.streams import campaign_stream
from labrxiv.interrupt import check_ctrl_c, pause
from labrxiv.report import RunEnding, run_endings
from projections.runner import ProjectionRunner
from projections.runs import CampaignRuns, RunsProjector, RunView
from workers.bus.base import Bus
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.lab.lease import Leases
from workers.lab.reaper import Reaper
from workers.reactor import Reactor
from workers.retry import is_transient

log = logging.getLogger(__name__)

CATCH_UP_PER_TICK = 20_000
"""Events the watcher applies to the runs read model per tick, at most: about 0.3 s
(the runs projector alone folds ~68k events/s, docs/benchmarks.md). A stale checkpoint on
a long log is caught up over several ticks, so the table keeps refreshing and the
reaper keeps running; the recorder's measured ingest (~16k events/s) is far below
this per tick, so the watcher does not fall behind a live campaign."""


@dataclass(frozen=True)
class CampaignOutcome:
    """A finished (or timed-out) campaign."""

    campaign: str
    runs: list[str]
    seconds: float
    finished: bool
    endings: tuple[RunEnding, ...] = ()
    """How each run ended, in lab order, as the last table showed them."""


class CampaignEnd:
    """Whether a campaign's stream holds `campaign.finished`, reading each event once.

    Each check reads only the events after the last version seen: the campaign stream
    is short, but re-reading it four times a second for hours is not free."""

    def __init__(self, store: EventStore, campaign: str) -> None:
        self.store = store
        self.stream = campaign_stream(campaign)
        self.version = -1
        self.finished = False

    def reached(self) -> bool:
        """Whether `campaign.finished` is in the log by now."""
        if not self.finished:
            for event in self.store.read_stream(self.stream, after_version=self.version):
                self.version = event.version
                self.finished = self.finished or event.type == "campaign.finished"
        return self.finished


def runs_runner(store: EventStore) -> ProjectionRunner:
    """A projection runner with the runs projector alone: what the watcher keeps current."""
    return ProjectionRunner(store, [RunsProjector()])


class Watching(TypedDict, total=False):
    """How `watch_campaign` watches, beyond its time limit (its defaults hold for what is
    not given)."""

    title: str
    """The live table's title (else the campaign's id and mode)."""
    stall_seconds: float
    """A run with no new event for this long and no step being taken has lost its step."""
    reactor: Reactor | None
    """Caught up each tick: the reactions of recorded events, from the log."""
    leases: Leases | None
    """Which runs have a step being taken."""


def run_campaign(
    bus: Bus,
    store: EventStore,
    plan: CampaignPlan,
    console: Console,
    timeout: float = 3600,
    campaign_id: str | None = None,
    **watching: Unpack[Watching],
) -> CampaignOutcome:
    """Start `plan` and show a live table of its labs until the campaign finishes.

    Each tick the watcher also catches `reactor` up (the reactions of recorded events,
    from the log: a safety net beside `labrxiv reactor`), and a run with no new event
    for `stall_seconds` and no step being taken (`leases`) has lost its next step (see
    `workers.lab.reaper`): the step is sent again. `campaign_id`: the id to start the
    campaign with (`workers.lab.campaign.deterministic_id`), else a random one.
    """
    campaign, runs = start_campaign(bus, plan, campaign_id)
    return watch_campaign(bus, store, campaign, runs, plan, console, timeout, **watching)


def watch_campaign(
    bus: Bus,
    store: EventStore,
    campaign: str,
    runs: list[str],
    plan: CampaignPlan,
    console: Console,
    timeout: float = 3600,
    title: str = "",
    stall_seconds: float = 30,
    reactor: Reactor | None = None,
    leases: Leases | None = None,
    until: frozenset[str] = frozenset(),
) -> CampaignOutcome:
    """Show a live table of a started campaign's labs until it finishes (`run_campaign`;
    `labrxiv resume` watches a campaign it did not start), or, given `until`, until those
    of its runs have finished (the others may stay interrupted)."""
    started = time.monotonic()
    runner = runs_runner(store)
    end = CampaignEnd(store, campaign)
    finished = False
    last_reap = started
    reaper = Reaper(bus, store, timedelta(seconds=stall_seconds), leases)
    title = title or f"campaign {campaign} ({plan.mode})"
    rows = CampaignRuns(campaign)
    views: list[RunView] = []
    with live_display(console) as live:
        while True:
            check_ctrl_c()
            try:
                # The end is looked for before the catch-up, and then the catch-up goes to
                # the head: the last table shown holds every event up to the campaign's end.
                finished = end.reached() or _all_finished(store, until)
                if reactor is not None:
                    reactor.catch_up()
                runner.catch_up(limit=None if finished else CATCH_UP_PER_TICK)
                views = watched_runs(store, rows, runs)
                live.update(ProgressTable(views, plan, title))
                if finished or time.monotonic() - started >= timeout:
                    break
                if time.monotonic() - last_reap > stall_seconds / 3:
                    reaper.reap(runs)
                    last_reap = time.monotonic()
            except Exception as exc:
                # A dropped database connection (or the broker away) costs a tick, never
                # the watcher and the reaping of its campaign.
                if not is_transient(exc):
                    raise
                reason = str(exc).partition("\n")[0]
                log.warning("campaign %s: database or broker away, next tick: %s", campaign, reason)
                if time.monotonic() - started >= timeout:
                    break
            pause(0.25)
    try:
        endings = tuple(run_endings(store, views))
    except Exception as exc:
        if not is_transient(exc):
            raise
        endings = ()  # the database is away: the table shown is all there is to say
    return CampaignOutcome(campaign, runs, time.monotonic() - started, finished, endings)


def _all_finished(store: EventStore, runs: frozenset[str]) -> bool:
    """Whether each of `runs` (some at least) has its `run.finished` in the log."""
    if not runs:
        return False
    heads = store.stream_heads(runs)
    return len(heads) == len(runs) and all(h.type == "run.finished" for h in heads.values())


def watched_runs(store: EventStore, rows: CampaignRuns, runs: list[str]) -> list[RunView]:
    """The campaign's runs as the runs read model has them, in lab order (`runs`' order:
    `run-…-10` after `run-…-9`, not after `run-…-1`)."""
    with store.engine.connect() as conn:
        views = rows.read(conn)
    order = {stream: index for index, stream in enumerate(runs)}
    return sorted(views, key=lambda view: order.get(view.stream, len(order)))


def progress_table(runs: list[RunView], plan: CampaignPlan, title: str) -> Table:
    """Labs of a campaign: tool calls, scored attempts, papers, best score, the wall time
    used (as its wall-time limit counts it: stops left out, a fork's going on from its
    parent's), status."""
    table = Table(title=title)
    for name in ("lab", "tool calls", "attempts", "papers", "best (normalized)", "time", "status"):
        table.add_column(name, overflow="fold")  # a narrow terminal folds cells, never "…"
    limit = plan.budget()[0].attempts
    for run in runs:
        status = "running" if not run.finished else f"finished ({run.finish_reason})"
        # A fork's budget counts the trajectory it stands on: so do its counts here.
        attempts = run.attempts + run.inherited_attempts
        table.add_row(
            run.lab or run.stream,
            str(run.steps),
            str(attempts) if limit is None else f"{attempts}/{limit}",
            _papers(run, plan.papers),
            "-" if run.best_score is None else f"{run.best_score:.3f}",
            f"{run.wall_seconds:.1f}s",
            status,
        )
    return table


@dataclass(frozen=True)
class ProgressTable:
    """`progress_table`, built when it is drawn: a live display draws it four times a
    second, a console that is not a terminal once, at the end (`FinalTable`), not at
    each of the watcher's ticks."""

    runs: list[RunView]
    plan: CampaignPlan
    title: str

    def __rich__(self) -> Table:
        return progress_table(self.runs, self.plan, self.title)


class FinalTable:
    """Where the console is not a terminal (a pipe, a file), what stands for rich's `Live`:
    it keeps the last table and prints it once, at the end, as any print (`Live` prints
    it at its stop without ending the line, and the bottom border runs into the next
    line)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.renderable: RenderableType | None = None

    def __enter__(self) -> "FinalTable":
        return self

    def update(self, renderable: RenderableType) -> None:
        """Keep `renderable`, the table to print at the end."""
        self.renderable = renderable

    def __exit__(self, *exc: object) -> None:
        if self.renderable is not None:
            self.console.print(self.renderable)


def live_display(console: Console) -> Live | FinalTable:
    """A table redrawn in place in a terminal; elsewhere the last table, printed once."""
    if console.is_terminal and not console.is_dumb_terminal:
        return Live(console=console, refresh_per_second=4, transient=False)
    return FinalTable(console)


def _papers(run: RunView, asked: int) -> str:
    """Papers written against those asked for; revisions after review apart (a lab that
    revised one of its 2 papers showed 3/2)."""
    written = run.papers - run.revisions + run.inherited_papers
    return f"{written}/{asked}" + (f" +{run.revisions} revised" if run.revisions else "")
