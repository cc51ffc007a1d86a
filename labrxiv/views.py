"""Rich renderings of read models and log entries, shared by CLI commands."""

from collections.abc import Mapping, Sequence

import orjson
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from events.recorded import Recorded
from labrxiv.run_detail import RunDetail
from projections.campaigns import CampaignInfo
from projections.runs import RunView


def runs_table(
    runs: Sequence[RunView], modes: Mapping[str, str | None], title: str = "runs"
) -> Table:
    """The runs read model as a table, each run with its campaign's id and mode (`modes`)."""
    table = Table(title=title)
    for name in (
        "run",
        "campaign",
        "mode",
        "task",
        "lab",
        "policy",
        "status",
        "events",
        "tool calls",
        "attempts",
        "papers",
        "best",
        "first",
        "last",
    ):
        # Fold, never "…": in a narrow terminal an id is still whole, over two lines.
        table.add_column(name, overflow="fold")
    for run in runs:
        table.add_row(
            run.stream,
            run.campaign or "-",
            modes.get(run.campaign or "") or "-",
            run.task or "-",
            run.lab or "-",
            run.policy or "-",
            _status(run),
            str(run.event_count),
            str(run.steps),
            str(run.attempts),
            str(run.papers),
            _score(run.best_score),
            f"{run.first_event_at:%H:%M:%S}" if run.first_event_at else "-",
            f"{run.last_event_at:%H:%M:%S}" if run.last_event_at else "-",
        )
    return table


def campaigns_table(campaigns: Sequence[CampaignInfo]) -> Table:
    """Campaigns, the first started first: what ran, how, and how well."""
    table = Table(title=f"campaigns ({len(campaigns)})")
    for name in ("campaign", "task", "mode", "policy", "labs", "status", "best", "started"):
        table.add_column(name, overflow="fold")
    for c in campaigns:
        status = c.status + (f" ({c.finish_reason})" if c.finish_reason else "")
        table.add_row(
            c.campaign,
            c.task or "-",
            c.mode or "-",
            c.policy or "-",
            str(c.labs),
            status,
            _score(c.best),
            f"{c.started_at:%Y-%m-%d %H:%M:%S}" if c.started_at else "-",
        )
    return table


def _reported(detail: RunDetail) -> str:
    return f" (and {detail.reported} the agent reported)" if detail.reported else ""


def _fork_point(run: RunView) -> list[Text]:
    """For a fork: where it branched, and that its best is its trajectory's."""
    if run.forked_from is None:
        return []
    return [
        Text(
            f"forked from {run.forked_from} at step {run.fork_step}: its best counts the"
            f" attempts it stands on; the tables below are its own"
        )
    ]


def _inherited(run: RunView) -> str:
    return f" (and {run.inherited_attempts} inherited)" if run.forked_from is not None else ""


def run_view(run: RunView, mode: str | None, detail: RunDetail) -> RenderableType:
    """One run: where it belongs, how it ended, its events by type, attempts and papers."""
    finish = f": {detail.finish_detail}" if detail.finish_detail else ""
    header = [
        Text(run.stream, style="bold"),
        Text(
            f"campaign {run.campaign or '-'} ({mode or 'mode unknown'}) · task {run.task or '-'}"
            f" · lab {run.lab or '-'} · policy {run.policy or '-'}"
        ),
        *_fork_point(run),
        Text(f"{_status(run)}{finish}"),
        Text(
            f"best normalized {_score(run.best_score)} · {run.attempts} scored attempts"
            f"{_inherited(run)}"
            f" · {run.steps} tool calls{_reported(detail)} · {run.papers} papers"
            f" · {run.elapsed_seconds:.1f}s from first to last event"
        ),
    ]
    kinds = Table(title="events by type")
    kinds.add_column("type")
    kinds.add_column("events", justify="right")
    for kind, count in sorted(detail.events.items()):
        kinds.add_row(kind, str(count))
    attempts = Table(title="scored attempts")
    for name in ("attempt", "score", "normalized"):
        attempts.add_column(name, justify="right")
    for a in detail.attempts:
        attempts.add_row(str(a.attempt), f"{a.score:.4f}", _score(a.normalized_score))
    papers = Table(title="papers")
    for name in ("paper", "submitted"):
        papers.add_column(name, overflow="fold")
    papers.add_column("title", overflow="fold")
    for p in detail.papers:
        papers.add_row(p.paper_id, f"{p.submitted_at:%Y-%m-%d %H:%M:%S}", escape(p.title))
    return Group(*header, kinds, attempts, papers)


def _status(run: RunView) -> str:
    return run.status + (f" ({run.finish_reason})" if run.finish_reason else "")


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def events_table(records: Sequence[Recorded]) -> Table:
    """Log entries, one line each with a payload summary."""
    table = Table()
    for name in ("pos", "stream", "v", "type", "occurred", "actor", "payload"):
        table.add_column(name, overflow="fold")
    for r in records:
        summary = orjson.dumps({k: v for k, v in r.payload.items() if k != "type"}).decode()
        table.add_row(
            str(r.position),
            r.stream,
            str(r.version),
            r.type,
            f"{r.occurred_at:%Y-%m-%d %H:%M:%S}",
            r.actor or "-",
            summary[:120] + ("…" if len(summary) > 120 else ""),
        )
    return table
