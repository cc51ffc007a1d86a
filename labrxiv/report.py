"""A campaign's summary read from the read models (curves, ledger, runs) once they are up
to date, and how each run of a campaign ended."""

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial

from rich.console import Console

from analysis.campaign_summary import CampaignSummary, summarize_campaign
from events import EventStore
from projections.curves import curve_points, paper_points
from projections.ledger import ledger_totals
from projections.runs import RunView, campaign_wall_seconds
from runstate.words import counted
from workers.gym.bundle import Bundle
from workers.gym.scoring import over_baseline

INTERRUPTED = "interrupted"
"""A run's ending when the command that ran it stopped it (the runs read model's status)."""


def summarize(store: EventStore, campaign: str, mode: str, bundle: Bundle) -> CampaignSummary:
    """The summary of a finished campaign whose read models are up to date
    (`analysis.campaign_summary`), on the task's primary subtask; its seconds are the wall
    time its runs used together (`projections.runs.campaign_wall_seconds`: stops left
    out)."""
    primary = bundle.card.subtask(bundle.card.primary)
    with store.engine.connect() as conn:
        papers = paper_points(conn, campaign)
        points = curve_points(conn, campaign)
        totals = ledger_totals(conn, by="campaign", campaign=campaign)
        seconds = campaign_wall_seconds(conn, campaign)
    return summarize_campaign(
        campaign,
        mode,
        papers,
        points,
        direction=primary.direction,
        over_baseline=partial(over_baseline, primary),
        seconds=seconds,
        compute_seconds=sum(t.compute_seconds for t in totals),
    )


@dataclass(frozen=True)
class RunEnding:
    """How one run of a campaign ended: its `run.finished` reason and detail."""

    lab: str
    reason: str | None
    """done, budget, error, cancelled; `interrupted` for a run the command stopped
    (embedded, at `--timeout`: `campaign.interrupted`); None while it runs."""
    detail: str
    stream: str = ""


def run_endings(store: EventStore, runs: Sequence[RunView]) -> list[RunEnding]:
    """Each run's ending. The runs read model has the reason but not the detail, which is
    the last event of the run's stream (read once per run, at the campaign's end)."""
    endings = []
    for run in runs:
        detail = ""
        if run.finished:
            last = store.last_record(run.stream)
            if last is not None and last.type == "run.finished":
                detail = str(last.typed().payload.detail)  # type: ignore[union-attr]
        reason = INTERRUPTED if run.status == INTERRUPTED else run.finish_reason
        endings.append(RunEnding(run.lab or run.stream, reason, detail, run.stream))
    return endings


def interrupted(endings: Sequence[RunEnding], runs: Iterable[str]) -> tuple[RunEnding, ...]:
    """`endings` with `runs` (stopped by the command, unfinished) marked `interrupted`, as
    the log has them: the watch's last look, before the stop, had them running (a run
    an earlier stop left, not resumed, is `interrupted` in the read model already)."""
    stopped = set(runs)
    return tuple(
        RunEnding(e.lab, INTERRUPTED, "`labrxiv resume` goes on with it", e.stream)
        if e.stream in stopped and e.reason is None
        else e
        for e in endings
    )


def every_run_errored(endings: Sequence[RunEnding]) -> bool:
    """Whether the campaign measured nothing: it had runs and each one ended in `error`."""
    return bool(endings) and all(e.reason == "error" for e in endings)


def count_endings(endings: Sequence[RunEnding]) -> str:
    """`2 runs: 1 done, 1 error` (`1 run: 1 done`)."""
    counts = Counter(e.reason or "running" for e in endings)
    return f"{counted(len(endings), 'run')}: " + ", ".join(
        f"{n} {r}" for r, n in sorted(counts.items())
    )


def print_endings(console: Console, endings: Sequence[RunEnding]) -> None:
    """One line per run, `lab: reason: detail`; an error's detail (a grader's traceback
    tail, a policy's exception) in full, since it is what the user has to fix."""
    if not endings:
        return
    # A live table rendered to a file or pipe leaves the cursor at its last border.
    console.print("\nhow each run ended:")
    for ending in endings:
        detail = ending.detail.strip()
        if ending.reason != "error":
            detail = detail.partition("\n")[0][:200]
        line = f"{ending.lab}: {ending.reason or 'running'}" + (f": {detail}" if detail else "")
        style = "red" if ending.reason == "error" else None
        console.print(line, style=style, markup=False, highlight=False, soft_wrap=True)
