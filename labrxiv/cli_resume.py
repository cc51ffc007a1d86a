"""`labrxiv resume`: go on with runs that a stop left unfinished (Ctrl-C of an embedded
campaign or demo, a killed process), and watch them to the end."""

from collections.abc import Callable
from dataclasses import dataclass

import typer

from events import EventStore
from events.streams import RUN_PREFIX
from labrxiv.campaigns import CampaignOutcome, watch_campaign
from labrxiv.cli_common import (
    GymPath,
    WatchTimeout,
    open_found_log,
    settings_or_exit,
    with_gym_path,
)
from labrxiv.cli_labs import (
    console,
    report_outcome,
    report_watch,
    require_sandbox,
    start_embedded,
)
from labrxiv.errors import NotFound
from labrxiv.exit_codes import EXIT_INTERRUPTED
from labrxiv.interrupt import (
    ctrl_c_between_ticks,
    say_stopped,
    settle_or_stop,
    stop_embedded,
)
from labrxiv.lookup import pick, pick_prefixed
from labrxiv.service_start import require_shared_database
from labrxiv.settings import Settings
from workers.bus.base import Bus
from workers.bus.processes import ChildDied
from workers.lab.campaign import CampaignPlan
from workers.lab.interrupt import resume_runs, unfinished_by_campaign
from workers.lab.lease import Leases
from workers.reactions import REACTIONS
from workers.reactor import Reactor


def resume(
    runs: list[str] | None = typer.Argument(
        None, help="Runs to go on with (ids or prefixes); default: every unfinished run."
    ),
    campaign: str | None = typer.Option(
        None, "--campaign", help="Only this campaign's unfinished runs (an id prefix)."
    ),
    timeout: WatchTimeout = 3600,
    gym_path: GymPath = None,
) -> None:
    """Send the next step of unfinished runs again and watch them until they finish.

    In embedded mode the work is done in this process (Ctrl-C stops it again, and
    `resume` goes on again); with Redis, the workers do it. Exit codes as `campaign`'s."""
    require_shared_database(settings_or_exit(), "resume")
    settings, store = open_found_log(with_gym_path(settings_or_exit(), gym_path))
    left = _chosen(store, campaign, runs or [])
    if settings.embedded:
        require_sandbox(settings)
    codes = [_resume(settings, store, name, streams, timeout) for name, streams in left.items()]
    raise typer.Exit(max(codes))


def _chosen(store: EventStore, campaign: str | None, names: list[str]) -> dict[str, list[str]]:
    """The unfinished runs to resume, by campaign; `NotFound` when there is none."""
    left = unfinished_by_campaign(store)
    if campaign is not None:
        if not any(name.startswith(campaign) for name in left) and campaign.strip():
            started = store.iter_records(types=["campaign.started"])
            if not any((r.correlation_id or "").startswith(campaign) for r in started):
                raise NotFound(f"no campaign {campaign} (`labrxiv campaigns` lists them)")
            raise NotFound(f"no unfinished run in campaign {campaign}: every run has finished")
        chosen = pick("campaign with unfinished runs", campaign, left)
        left = {chosen: left[chosen]}
    if names:
        streams = {s for runs in left.values() for s in runs}
        wanted = {pick_prefixed("unfinished run", RUN_PREFIX, name, streams, "") for name in names}
        left = {c: [s for s in runs if s in wanted] for c, runs in left.items()}
        left = {c: runs for c, runs in left.items() if runs}
    if not left:
        where = f" in campaign {campaign}" if campaign else ""
        raise NotFound(f"no unfinished run{where}: every run has finished")
    return left


def _resume(
    settings: Settings, store: EventStore, campaign: str, runs: list[str], timeout: float
) -> int:
    every = [r.stream for r in store.iter_records(types=["run.started"], correlation=campaign)]
    until = frozenset(runs) if len(runs) < len(every) else frozenset()

    def act(bus: Bus) -> Watched:
        resume_runs(bus, store, runs)
        return Watched(campaign, every, plan_of(store, campaign))

    title = f"resumed: campaign {campaign}, {len(runs)} runs"
    agent = plan_of(store, campaign).policy == "agent"
    return follow(settings, store, act, timeout, title, until, (len(runs), agent))


def follow(
    settings: Settings,
    store: EventStore,
    act: Callable[[Bus], "Watched"],
    timeout: float,
    title: str,
    until: frozenset[str] = frozenset(),
    working: tuple[int, bool] = (1, False),
) -> int:
    """Send work with `act` (it returns the campaign it concerns) and watch that campaign
    to its end, or `until` those runs end; embedded here (Ctrl-C stops it as it stops a
    campaign), else through the workers. `working`: how many runs take steps at once,
    and whether they are agents' (the embedded system's threads and worker processes).
    Returns the exit code."""
    from labrxiv.wiring import open_bus, open_runner

    if settings.embedded:
        system = start_embedded(settings, *working)
        try:
            with ctrl_c_between_ticks():
                outcome = _watch(
                    system.bus,
                    system.store,
                    act(system.bus),
                    settings,
                    timeout,
                    title,
                    until,
                    system.ctx.reactor,
                    system.ctx.leases,
                )
                detail = f"--timeout {timeout:g}s in labrxiv"
                left = settle_or_stop(system, outcome.finished, detail, outcome.campaign)
        except (KeyboardInterrupt, ChildDied):
            console.print("stopping: the steps being taken end first (Ctrl-C again to quit now)")
            say_stopped(console, stop_embedded(system, "Ctrl-C in labrxiv"))
            return EXIT_INTERRUPTED
        finally:
            system.close()
        return report_watch(outcome, left)
    bus = open_bus(settings)
    try:
        reactor = Reactor(store, bus, REACTIONS)
        leases = Leases(store, ttl=settings.stall_seconds)
        outcome = _watch(bus, store, act(bus), settings, timeout, title, until, reactor, leases)
        open_runner(settings, store).catch_up()
    except KeyboardInterrupt:
        console.print("stopped watching: the workers go on with the runs (`labrxiv runs`)")
        return EXIT_INTERRUPTED
    finally:
        bus.close()
    return report_outcome(outcome)


@dataclass(frozen=True)
class Watched:
    """What `follow` watches: a campaign, its runs and its plan (for the live table)."""

    campaign: str
    runs: list[str]
    plan: CampaignPlan


def _watch(
    bus: Bus,
    store: EventStore,
    watched: Watched,
    settings: Settings,
    timeout: float,
    title: str,
    until: frozenset[str],
    reactor: Reactor | None,
    leases: Leases | None,
) -> CampaignOutcome:
    plan = watched.plan
    return watch_campaign(
        bus,
        store,
        watched.campaign,
        watched.runs,
        plan,
        console,
        timeout,
        f"{title} ({plan.mode})",
        settings.stall_seconds,
        reactor,
        leases,
        until,
    )


def plan_of(store: EventStore, campaign: str) -> CampaignPlan:
    """The plan a campaign was started with, as far as its events say (what the live
    table shows: labs, attempts and papers per lab)."""
    started = store.read_records(types=["campaign.started"], correlation=campaign, limit=1)
    first = store.read_records(types=["run.started"], correlation=campaign, limit=1)
    if not first:
        raise NotFound(f"campaign {campaign} has no run")
    run = first[0].payload
    head = started[0].payload if started else {}
    return CampaignPlan(
        task=run["task"],
        labs=head.get("labs", 1),
        papers=run.get("papers", 1),
        mode=head.get("mode", "archive" if run.get("reads_archive") else "isolated"),
        seed=head.get("seed", 0),
        attempts=(run.get("budget") or {}).get("attempts"),
        policy=run.get("policy", "search"),
    )
