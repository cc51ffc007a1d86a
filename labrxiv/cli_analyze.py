"""`labrxiv analyze RUN|CAMPAIGN`: behaviour figures, findings and, for a campaign, the
comparison of its runs, computed from the log (`analysis.report`), as tables, JSON or a
self-contained HTML page (`labrxiv.html_report`)."""

from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import cast

import orjson
import typer
from pydantic import ValidationError
from rich.console import Group, RenderableType
from rich.table import Table
from sqlalchemy import Connection

from analysis.across import Across
from analysis.campaign import CampaignBehaviour
from analysis.correlation import Correlation, Estimate
from analysis.figures import THIRDS, Behaviour, Cost
from analysis.findings_hook import run_findings
from analysis.inspection_tools import Inspected
from analysis.report import (
    Analysis,
    RunAnalysis,
)
from events import Event, EventStore
from events.payloads import InspectionConfig
from events.payloads.inspection import Verdict
from events.streams import CAMPAIGN_PREFIX, RUN_PREFIX
from labrxiv.analysis_of import analysis_of, stream_events
from labrxiv.cli_bounds import INT64_MAX, count_option, dollars_option
from labrxiv.cli_common import AsJson, emit_json, read_runner
from labrxiv.cli_errors import say_error
from labrxiv.console import console
from labrxiv.errors import NotFound, written
from labrxiv.html_report import page
from labrxiv.lookup import campaign_ids, pick, resolve_run
from labrxiv.money import dollars_text
from runstate import loader
from runstate.words import counted

OUT_FILE = "analysis.json"
PAGE_FILE = "analysis.html"


def analyze(
    target: str = typer.Argument(
        ..., help="A run (run-<campaign>-<lab>) or a campaign id, or a prefix of either."
    ),
    as_json: AsJson = False,
    out: Path | None = typer.Option(
        None, "--out", help=f"Also write {OUT_FILE} and {PAGE_FILE} in this folder."
    ),
    html: Path | None = typer.Option(
        None, "--html", help="Also write the analysis as one HTML page (opens offline)."
    ),
    seed: int = typer.Option(0, help="Seed of the bootstrap intervals.", max=INT64_MAX, min=0),
    findings: bool = typer.Option(
        True, "--findings/--no-findings", help="Run the failure-mode detectors (the slow part)."
    ),
    inspector: str | None = typer.Option(
        None,
        "--inspector",
        help="Also have this model inspect each run through tools and give a verdict "
        "(its calls are recorded, priced and budgeted; docs/analysis.md).",
    ),
    inspector_base_url: str | None = typer.Option(
        None, "--inspector-base-url", help="The inspector's OpenAI-compatible endpoint."
    ),
    inspector_turns: int = typer.Option(
        12, "--inspector-turns", min=1, max=100, help="Model calls per run before a verdict."
    ),
    inspector_tokens: int | None = count_option(
        "--inspector-tokens", "Stop inspecting past these tokens."
    ),
    inspector_dollars: float | None = dollars_option(
        "--inspector-dollars", "Stop inspecting past these dollars."
    ),
) -> None:
    """Behaviour of a run or a campaign (action density, tool mix by phase and by third,
    time between actions, reasoning tokens, where time and money went, the useful window),
    failure-mode findings, and for a campaign its runs compared, with the correlation of
    density and cost with the best score."""
    runner = read_runner()
    store = runner.store
    with store.engine.connect() as conn:
        kind, name = _resolve(store, conn, target)
        result = analysis_of(store, conn, kind, name, seed=seed, findings=findings)
    if inspector is not None:
        try:
            config = InspectionConfig(
                model=inspector,
                base_url=inspector_base_url,
                turns=inspector_turns,
                tokens=inspector_tokens,
                dollars=inspector_dollars,
            )
        except ValidationError as exc:
            message = str(exc.errors()[0]["msg"])
            raise typer.BadParameter(message, param_hint="--inspector") from None
        result = replace(result, inspections=_inspect(store, result, config))
    document = asdict(result)
    written: list[Path] = []
    if out is not None:
        _write(out / OUT_FILE, orjson.dumps(document, option=JSON_OPTIONS, default=str))
        written.append(out / OUT_FILE)
    pages = [p for p in (html, out / PAGE_FILE if out is not None else None) if p is not None]
    if pages:
        shown = page(result, lambda stream, version: _events(store, stream, version)).encode()
        for path in pages:
            _write(path, shown)
            written.append(path)
    if as_json:
        emit_json(document)
    else:
        console.print(_shown(result))
        for path in written:
            console.print(f"wrote {path}")
    unanswered = [i for i in result.inspections if i.verdict is None]
    if unanswered:  # the analysis is shown; the inspection asked for did not happen
        for item in unanswered:
            why = f"{item.summary} (its stream: {item.stream})"
            say_error(f"the inspector gave no verdict on {item.run}: {why}")
        raise typer.Exit(1)


def _inspect(
    store: EventStore, result: Analysis, config: InspectionConfig
) -> tuple[Inspected, ...]:
    """The LLM inspector's verdict on each run of `result`, beside the detectors'."""
    from labrxiv.inspector_run import inspect_runs  # the gateway and bus: only when asked

    judged = []
    for item in result.runs:
        run = item.behaviour.run
        found = item.findings or run_findings(_events(store, run, None), loader(store))
        judged.append((run, found.findings, cast(Verdict, found.verdict)))
    return tuple(inspect_runs(judged, config, lambda s, v: _events(store, s, v)))


def _resolve(store: EventStore, conn: Connection, text: str) -> tuple[str, str]:
    """("run", stream) or ("campaign", id). A text that starts a campaign id names the
    campaign (its runs' streams start with it too); anything else is looked up as a run."""
    if not text.strip():
        raise NotFound("an empty id names no run or campaign")
    if text.startswith(RUN_PREFIX):
        return "run", resolve_run(conn, text)
    bare = text.removeprefix(CAMPAIGN_PREFIX)
    known = campaign_ids(store, conn)
    if any(c.startswith(bare) for c in known) or text.startswith(CAMPAIGN_PREFIX):
        return "campaign", pick("campaign", bare, known, "labrxiv campaigns lists them")
    try:
        return "run", resolve_run(conn, text)
    except NotFound:
        raise NotFound(
            f"no run or campaign {text} (labrxiv runs and labrxiv campaigns list them)"
        ) from None


JSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS


def _write(path: Path, content: bytes) -> None:
    with written(path):
        path.write_bytes(content)


def _events(store: EventStore, stream: str, version: int | None) -> list[Event]:
    return stream_events(store, stream, version)


# -- tables ------------------------------------------------------------------------


def _shown(result: Analysis) -> Group:
    parts: list[RenderableType] = []
    if result.kind == "run":
        only = result.runs[0]
        parts += [_behaviour_table(only.behaviour), _mix_table(only.behaviour)]
        parts += _findings(only, result.findings_note)
    else:
        assert result.campaign is not None and result.across is not None
        parts += [_campaign_table(result.target, result.campaign)]
        parts += [_comparison_table(result.runs, result.across), _correlations(result.across)]
        parts += _campaign_findings(result.runs)
        if result.findings_note:
            parts.append(f"[dim]{result.findings_note}[/]")
    if result.inspections:
        parts.append(_inspections(result.inspections))
    return Group(*parts)


def _inspections(inspections: tuple[Inspected, ...]) -> Table:
    table = Table(title="LLM inspector", title_justify="left")
    for column in ("run", "inspector", "detectors", "summary and evidence", "stream"):
        table.add_column(column, overflow="fold")
    for i in inspections:
        said = i.summary + "".join(f"\n- {event}: {why}" for event, why in i.evidence)
        table.add_row(i.run, i.verdict or "no verdict", i.detectors, said, i.stream)
    return table


def _pairs(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("figure", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in rows:
        table.add_row(key, value)
    return table


def _behaviour_table(b: Behaviour) -> Table:
    t, m, u, k = b.time, b.money, b.useful, b.tokens
    rows = [
        ("run", f"{b.run} ({b.policy}, {b.task}, {b.finished or 'running'})"),
        ("events / steps / papers", f"{b.events} / {b.steps} / {b.papers}"),
        ("duration", _seconds(b.duration_s)),
        ("actions (tool calls)", f"{b.density.actions}, {_num(b.density.per_hour)} per hour"),
        ("density over the run (/h)", " ".join(f"{x.per_hour:.0f}" for x in b.density.bins)),
        (
            "between actions",
            f"median {_secs(b.gaps.median_s)}, p90 {_secs(b.gaps.p90_s)}, "
            f"max {_secs(b.gaps.max_s)}",
        ),
        (
            "tokens",
            f"{k.total} ({k.reasoning} reasoning, {k.rest} rest); {k.model_calls} model calls, "
            f"{k.failed} failed, {k.unknown_outcome} of unknown outcome",
        ),
        (
            "time",
            f"tools {_seconds(t.tools_s)}, model {_seconds(t.model_s)}, idle {_seconds(t.idle_s)}"
            + _top(t.by_tool_s, _seconds),
        ),
        (
            "money",
            dollars_text(m.dollars, m.unknown_cost, m.priced) + _costs("by phase", m.by_phase),
        ),
        ("money by model", _costs("", m.by_model).lstrip("; ") or "-"),
        ("useful window", _useful(u.best, u.best_attempt, u.best_step, u.best_at_s, u.after_share)),
    ]
    return _pairs(f"behaviour of {b.run}", rows)


def _mix_table(b: Behaviour) -> Table:
    mix = b.tool_mix
    phases = list(mix.by_phase)
    table = Table(title="tool mix (calls)", title_justify="left")
    table.add_column("tool")
    for name in [*THIRDS, *phases]:
        table.add_column(name, justify="right")
    table.add_column("all", justify="right")
    for tool, calls in mix.by_tool.items():
        cells = [str(mix.by_third[n].get(tool, 0)) for n in THIRDS]
        cells += [str(mix.by_phase[p].get(tool, 0)) for p in phases]
        table.add_row(tool, *cells, str(calls))
    if mix.phases_note:
        table.caption, table.caption_justify = mix.phases_note, "left"
    return table


def _findings(run: RunAnalysis, note: str | None) -> list[RenderableType]:
    if run.findings is None:
        return [f"[dim]{note}[/]"] if note else []
    if not run.findings.findings:
        return [f"findings: {run.findings.verdict}, the detectors found nothing"]
    table = Table(title=f"findings: {run.findings.verdict}", title_justify="left")
    for name in ("mode", "severity", "detector", "summary", "events"):
        table.add_column(name, overflow="fold")
    for f in run.findings.findings:
        shown = ", ".join(str(e)[:8] for e in f.events[:5])
        table.add_row(f.mode, f.severity, f.detector, f.summary, shown)
    return [table]


def _campaign_findings(runs: tuple[RunAnalysis, ...]) -> list[RenderableType]:
    found = [(r.behaviour.run, f) for r in runs if r.findings for f in r.findings.findings]
    if not found:
        return []
    table = Table(title=f"{len(found)} findings", title_justify="left")
    for name in ("run", "mode", "severity", "detector", "summary"):
        table.add_column(name, overflow="fold")
    for run, f in found:
        table.add_row(run, f.mode, f.severity, f.detector, f.summary)
    return [table]


def _campaign_table(campaign: str, c: CampaignBehaviour) -> Table:
    rows = [
        ("runs", ", ".join(f"{n} {why}" for why, n in c.finished.items())),
        ("actions", f"{c.actions} in {c.run_hours:.2f} run-hours: {_num(c.per_hour)} per hour"),
        ("tools", _top(c.by_tool, lambda v: str(int(v))).lstrip("; ") or "-"),
        (
            "tokens",
            f"{c.tokens} ({c.reasoning_tokens} reasoning"
            + (f", {c.reasoning_share:.0%}" if c.reasoning_share is not None else "")
            + ")",
        ),
        (
            "time",
            f"tools {_seconds(c.tools_s)}, model {_seconds(c.model_s)}, idle {_seconds(c.idle_s)}",
        ),
        (
            "money",
            dollars_text(c.dollars, c.unknown_cost, c.priced)
            + _costs("by phase", c.money_by_phase),
        ),
        (
            "best score",
            f"{_num(c.best, 3)} ({c.scored_runs} runs scored; median share of a run after "
            f"its best: {_share(c.after_share_median)})",
        ),
    ]
    return _pairs(f"campaign {campaign}", rows)


def _comparison_table(runs: tuple[RunAnalysis, ...], compared: Across) -> Table:
    verdicts = {r.behaviour.run: r.findings.verdict for r in runs if r.findings is not None}
    count = len(compared.runs)
    title = f"{counted(count, 'run')}, best first"
    table = Table(title=title, title_justify="left")
    columns = ["run", "lab", "ended", "best", "scored", "actions", "/h", "time", "tokens", "$"]
    for name in [*columns, "after best", *(["verdict"] if verdicts else [])]:
        table.add_column(name, justify="left" if name in ("run", "lab", "ended") else "right")
    for r in compared.runs:
        table.add_row(
            r.run,
            r.lab or "",
            r.finished or "running",
            _num(r.best, 3),
            str(r.scored),
            str(r.actions),
            _num(r.per_hour),
            _seconds(r.duration_s),
            str(r.tokens),
            dollars_text(r.dollars, r.unknown_cost, r.priced),
            _share(r.best_after_share),
            *([verdicts.get(r.run, "")] if verdicts else []),
        )
    return table


def _correlations(compared: Across) -> Table:
    level = f"{compared.confidence:.0%}"
    table = Table(
        title=f"against the best score ({level} bootstrap intervals, "
        f"{compared.resamples} resamples, seed {compared.seed})",
        title_justify="left",
    )
    for name in ("figure", "runs", "Pearson r", "Spearman ρ", "note"):
        table.add_column(name, overflow="fold")
    for c in compared.correlations:
        table.add_row(c.x, str(c.n), _estimate(c.pearson), _estimate(c.spearman), _note(c))
    return table


def _estimate(e: Estimate | None) -> str:
    if e is None:
        return "-"
    interval = "" if e.low is None or e.high is None else f" [{e.low:+.2f}, {e.high:+.2f}]"
    return f"{e.value:+.2f}{interval} p={e.p_value:.2g}"


def _note(c: Correlation) -> str:
    return c.note or ""


def _useful(
    best: float | None, attempt: int | None, step: int | None, at: float | None, share: float | None
) -> str:
    if best is None:
        return "no scored attempt with a normalized score"
    return (
        f"best {best:.3f} from attempt {attempt} at step {step}, {_seconds(at or 0.0)} in; "
        f"{_share(share)} of the run came after it"
    )


def _costs(label: str, costs: dict[str, Cost]) -> str:
    parts = [f"{k} {dollars_text(c.dollars, c.unknown_cost, c.priced)}" for k, c in costs.items()]
    return f"; {label} " + ", ".join(parts) if parts else ""


def _top(values: Mapping[str, float], fmt: Callable[[float], str]) -> str:
    shown = [f"{k} {fmt(v)}" for k, v in list(values.items())[:6]]
    return "; " + ", ".join(shown) if shown else ""


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _secs(value: float | None) -> str:
    return "-" if value is None else _seconds(value)


def _seconds(value: float) -> str:
    if value >= 3600:
        return f"{value / 3600:.2f} h"
    if value >= 60:
        return f"{value / 60:.1f} min"
    return f"{value:.2f} s"
