"""Running a campaign from the shell: start it, watch its labs live, wait for the end.

Works the same embedded (the local bus does the work in this process) and
distributed (workers on Redis do it; this process only publishes and watches the log).
"""

import time
from dataclasses import dataclass
from datetime import timedelta

from rich.console import Console
from rich.live import Live
from rich.table import Table

from events import EventStore
from workers.bus.base import Bus
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.lab.reaper import reap
from workers.lab.state import RunState, fold


@dataclass(frozen=True)
class CampaignOutcome:
    """A finished (or timed-out) campaign."""

    campaign: str
    runs: list[str]
    seconds: float
    finished: bool


def run_campaign(
    bus: Bus,
    store: EventStore,
    plan: CampaignPlan,
    console: Console,
    timeout: float = 3600,
    title: str = "",
    stall_seconds: float = 600,
) -> CampaignOutcome:
    """Start `plan` and show a live table of its labs until the campaign finishes.

    A run with no new event for `stall_seconds` has lost its next step (see
    `workers.lab.reaper`): the step is sent again.
    """
    started = time.monotonic()
    campaign, runs = start_campaign(bus, plan)
    finished = False
    last_reap = started
    with Live(console=console, refresh_per_second=4, transient=False) as live:
        while time.monotonic() - started < timeout:
            states = _states(store, runs)
            live.update(progress_table(states, plan, title or f"campaign {campaign} ({plan.mode})"))
            if _campaign_finished(store, campaign):
                finished = True
                break
            if time.monotonic() - last_reap > min(stall_seconds, 30):
                reap(bus, store, runs, timedelta(seconds=stall_seconds))
                last_reap = time.monotonic()
            time.sleep(0.25)
    return CampaignOutcome(campaign, runs, time.monotonic() - started, finished)


def progress_table(states: list[RunState], plan: CampaignPlan, title: str) -> Table:
    """Labs of a campaign: step, papers, best score, time."""
    table = Table(title=title)
    for name in ("lab", "step", "attempts", "papers", "best normalized", "time", "status"):
        table.add_column(name)
    for state in states:
        scores = [a.normalized for a in state.attempts if a.normalized is not None]
        elapsed = (state.last_at - state.started_at).total_seconds()
        status = "running" if state.finished is None else f"finished ({state.finished.reason})"
        table.add_row(
            state.lab,
            str(state.steps),
            f"{len(state.attempts)}/{plan.attempts}",
            f"{len(state.papers)}/{plan.papers}",
            f"{max(scores):.3f}" if scores else "-",
            f"{elapsed:.1f}s",
            status,
        )
    return table


def _states(store: EventStore, runs: list[str]) -> list[RunState]:
    states = []
    for stream in runs:
        events = store.read_stream(stream)
        if events:
            states.append(fold(events))
    return states


def _campaign_finished(store: EventStore, campaign: str) -> bool:
    return any(e.type == "campaign.finished" for e in store.read_stream(f"campaign-{campaign}"))
