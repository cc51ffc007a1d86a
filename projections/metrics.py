"""Research metrics for Prometheus, read from the read models at each scrape.

A prometheus-client custom collector: every scrape runs a few GROUP BY queries over
the read models (runs, ledger, papers, findings) in one snapshot, and nothing is
counted in the exporter's memory. So the figures are those of the log, whatever
process serves them: an exporter restarted, a projector restarted, a `labrxiv rebuild`
or two exporters at once give the same samples for the same checkpoints. A counter
read this way drops to 0 while a rebuild replays the log (Prometheus treats that as a
counter reset, as after a process restart).

Bounded labels (Prometheus: no unbounded label sets). Runs, campaigns, labs and models
grow with use, so each is a label value only for the most recent ones (`Bounds`):
- runs: the `Bounds.runs` most recent runs (running runs first, then by their last
  event's position); the others' best scores are aggregated per task under
  `run="other"`, and their budgets are not shown one by one;
- campaigns: the `Bounds.campaigns` campaigns whose runs moved last;
- labs and models: the `Bounds.labs` labs and `Bounds.models` models with the most
  recent ledger rows; the rest are summed under `lab="other"`, `model="other"`.
Tools, tasks, event types, statuses and reasons are fixed by the code and the task
bundles. docs/metrics.md lists every metric and label.
"""

from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from sqlalchemy import (
    Connection,
    Engine,
    Numeric,
    case,
    cast,
    column,
    func,
    inspect,
    select,
    table,
)

from events.actions import is_action
from events.payloads.experiment import Direction
from events.store import EVENTS
from events.streams import campaign_stream
from projections.archive import PAPERS
from projections.curves import CURVE_RUNS
from projections.ledger import LEDGER, MODEL_KINDS, TOOL_KINDS
from projections.metric_bounds import DEFAULT_BOUNDS, Bounds
from projections.runs import RUNS, RunView, campaign_wall_seconds, runs_to_watch
from runstate.best import NORMALIZED, best_ranked

OTHER = "other"
"""The label value under which what is past a bound is aggregated."""
NONE = "none"
"""The label value of an unknown or absent name (a run not finished has no reason)."""
BUDGETS = ("attempts", "steps", "tokens", "dollars", "wall_seconds")
"""The `budget` label: the limits of `events.payloads.Budget`, each in its own unit."""
TOKEN_KINDS = {
    "input": "input_tokens",
    "cached_input": "cached_input_tokens",
    "output": "output_tokens",
    "reasoning": "reasoning_tokens",
}
"""The `kind` label of `labrxiv_model_tokens_total` → its ledger column. As in the OTel
GenAI conventions, cached input is part of input and reasoning part of output."""
OUTCOMES = {"responded": "responded", "failed": "failed", "called": "unknown"}
"""Ledger status of a model call → the `outcome` label (`unknown`: written ahead, no
answer or failure recorded: the worker died mid-call, the provider may have billed it)."""

KNOWN_STATUSES = (
    ("running", NONE),
    ("interrupted", NONE),
    *(("finished", reason) for reason in ("done", "budget", "error", "cancelled")),
)
"""The (status, finish_reason) pairs of `labrxiv_runs`, exported at 0 until they occur."""

# Read models being written by others may not exist yet: named here, not imported.
_FINDINGS = table("findings", column("detector"), column("severity"))
_VERDICTS = table("findings_runs", column("verdict"))


class ResearchCollector:
    """Reads the research metrics from the read models on each `collect()`."""

    def __init__(self, engine: Engine, bounds: Bounds = DEFAULT_BOUNDS) -> None:
        self.engine = engine
        self.bounds = bounds

    def collect(self) -> Iterator[Metric]:
        """Every research metric, from one snapshot of the read models."""
        with _snapshot(self.engine) as conn, conn.begin():
            _tune(conn)
            yield from research_metrics(conn, self.bounds)

    def describe(self) -> list[Metric]:
        """Nothing: registering the collector must not query the database."""
        return []


def _snapshot(engine: Engine) -> Connection:
    """A connection whose transaction sees one state of every read model (a projector
    committing mid-scrape is seen wholly or not at all: the metrics agree with each
    other). SQLite's read transaction is a snapshot already."""
    conn = engine.connect()
    if engine.dialect.name == "postgresql":
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
    return conn


def _tune(conn: Connection) -> None:
    """PostgreSQL: enough memory for the ledger's GROUP BY to hash in memory. At the
    default 4 MB it sorted 437,000 rows on disk (600 ms at 1,000,000 events; 300 ms
    hashed, bench/exporter.py). For this transaction only."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET LOCAL work_mem = '64MB'")


def research_metrics(conn: Connection, bounds: Bounds) -> list[Metric]:
    """Every research metric, read on `conn`, samples in label order."""
    shown = runs_to_watch(conn, bounds.runs)
    metrics = [
        _runs_by_status(conn),
        _best_scores(conn, shown),
        *_run_activity(shown),
        *_run_budgets(conn, shown),
        *_campaign_budgets(conn, bounds.campaigns),
        *_ledger_metrics(conn, bounds),
        _papers(conn),
        *_findings(conn),
    ]
    other = GaugeMetricFamily(
        "labrxiv_exporter_other_runs",
        'Runs past the bound of runs shown one by one (aggregated under run="other").',
        value=_count_runs(conn) - len(shown),
    )
    return [*metrics, other]


def _count_runs(conn: Connection) -> int:
    return conn.execute(select(func.count()).select_from(RUNS)).scalar_one()


def _runs_by_status(conn: Connection) -> Metric:
    metric = GaugeMetricFamily(
        "labrxiv_runs",
        "Runs by status (running, finished, interrupted) and finish reason (done, budget, "
        "error, cancelled; none while not finished).",
        labels=["status", "finish_reason"],
    )
    query = select(RUNS.c.status, RUNS.c.finish_reason, func.count()).group_by(
        RUNS.c.status, RUNS.c.finish_reason
    )
    counts = dict.fromkeys(KNOWN_STATUSES, 0)  # series known to exist are exported at 0
    for status, reason, n in conn.execute(query):
        counts[(status, reason or NONE)] = n
    for labels, count in sorted(counts.items()):
        metric.add_metric(list(labels), count)
    return metric


def _run_activity(shown: Sequence[RunView]) -> list[Metric]:
    """When each shown run's last event happened, and whether it is running: a run stuck
    (running, no event for a while) is `(time() - last) * running` above a bound."""
    last = GaugeMetricFamily(
        "labrxiv_run_last_event_timestamp_seconds",
        "When a run's last event happened (Unix seconds), for the runs shown one by one.",
        labels=["run"],
    )
    running = GaugeMetricFamily(
        "labrxiv_run_running",
        "1 while a run shown one by one is running, else 0.",
        labels=["run"],
    )
    for run in sorted(shown, key=lambda r: r.stream):
        if run.last_event_at is not None:
            last.add_metric([run.stream], run.last_event_at.timestamp())
            running.add_metric([run.stream], 1.0 if run.status == "running" else 0.0)
    return [last, running]


def _best_scores(conn: Connection, shown: Sequence[RunView]) -> Metric:
    metric = GaugeMetricFamily(
        "labrxiv_run_best_normalized_score",
        "Best normalized score of a run so far (the raw score for a task with no SOTA); "
        'run="other": the best of the runs past the bound, per task.',
        labels=["run", "task"],
    )
    for run in sorted(shown, key=lambda r: r.stream):
        if run.best_score is not None:
            metric.add_metric([run.stream, run.task or NONE], run.best_score)
    way = RUNS.c.best_direction
    query = select(RUNS.c.task, way, func.max(RUNS.c.best_score), func.min(RUNS.c.best_score))
    query = query.where(RUNS.c.best_score.is_not(None))
    if shown:
        query = query.where(RUNS.c.stream.not_in([r.stream for r in shown]))
    tops: dict[str, list[tuple[float, Direction]]] = {}
    for task, direction, high, low in conn.execute(query.group_by(RUNS.c.task, way)):
        direction = direction or NORMALIZED
        tops.setdefault(task or NONE, []).append(
            (high if direction == "maximize" else low, direction)
        )
    for task, scores in sorted(tops.items()):
        best = best_ranked(scores)
        if best is not None:
            metric.add_metric([OTHER, task], best[0])
    return metric


def _budget_metrics(what: str, label: str) -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
    unit = "in the budget's own unit (attempts, steps, tokens, dollars, seconds)"
    used = GaugeMetricFamily(
        f"labrxiv_{what}_budget_used",
        f"What a {what} used of each budget it has a limit for, {unit}.",
        labels=[label, "budget"],
    )
    left = GaugeMetricFamily(
        f"labrxiv_{what}_budget_left",
        f"What is left of each budget of a {what} (0 once used up), {unit}.",
        labels=[label, "budget"],
    )
    return used, left


def _run_budgets(conn: Connection, shown: Sequence[RunView]) -> list[Metric]:
    """Used and left of each limited budget of the shown runs, as the lab's check counts
    them (`runstate.budget.run_used`): a fork's with what the trajectory it stands on
    used. Wall seconds are counted by the lab's rule, the time stood stopped left out, to
    the run's last event (not to now: two scrapes of one log give one answer):
    `projections.runs.wall_used_to_last`."""
    used_metric, left_metric = _budget_metrics("run", "run")
    streams = [r.stream for r in shown]
    limits = _limits(conn, streams)
    spend = _spend(conn, CURVE_RUNS.c.run, streams)
    for run in sorted(shown, key=lambda r: r.stream):
        tokens, dollars = spend.get(run.stream, (0, 0.0))
        used = {
            "attempts": run.inherited_attempts + run.attempts,
            "steps": run.inherited_steps + run.steps,
            "tokens": run.inherited_tokens + tokens,
            "dollars": run.inherited_dollars + dollars,
            "wall_seconds": run.wall_seconds,
        }
        _add_budgets(used_metric, left_metric, run.stream, limits.get(run.stream, {}), used)
    return [used_metric, left_metric]


def _campaign_budgets(conn: Connection, limit: int) -> list[Metric]:
    """Used and left of each limited budget of the most recent campaigns: attempts and
    steps summed over their runs; tokens and dollars over their runs, reviews and
    inspections, as the lab's and the review's check counts them
    (`workers.lab.campaign_spend`: every stream of the campaign); wall seconds as the
    time its runs worked together (`projections.runs.campaign_wall_seconds`, as the
    campaign's summary counts it: the time they stood stopped left out)."""
    used_metric, left_metric = _budget_metrics("campaign", "campaign")
    query = (
        select(
            RUNS.c.campaign,
            func.sum(RUNS.c.attempts),
            func.sum(RUNS.c.steps),
        )
        .where(RUNS.c.campaign.is_not(None))
        .group_by(RUNS.c.campaign)
        .order_by(func.max(RUNS.c.last_position).desc(), RUNS.c.campaign)
        .limit(limit)
    )
    rows = list(conn.execute(query))
    campaigns = [row[0] for row in rows]
    limits = _limits(conn, [campaign_stream(c) for c in campaigns])
    spend = _spend(conn, CURVE_RUNS.c.campaign, campaigns)
    reviews = _review_spend(conn, campaigns)
    for campaign, attempts, steps in sorted(rows):
        tokens, dollars = spend.get(campaign, (0, 0.0))
        review_tokens, review_dollars = reviews.get(campaign, (0, 0.0))
        tokens, dollars = tokens + review_tokens, dollars + review_dollars
        used = {
            "attempts": attempts,
            "steps": steps,
            "tokens": tokens,
            "dollars": dollars,
            "wall_seconds": campaign_wall_seconds(conn, campaign),
        }
        budget = limits.get(campaign_stream(campaign), {})
        _add_budgets(used_metric, left_metric, campaign, budget, used)
    return [used_metric, left_metric]


def _add_budgets(
    used_metric: GaugeMetricFamily,
    left_metric: GaugeMetricFamily,
    name: str,
    limits: dict[str, float],
    used: dict[str, float],
) -> None:
    for budget in BUDGETS:
        limit = limits.get(budget)
        if limit is None:
            continue
        used_metric.add_metric([name, budget], used[budget])
        left_metric.add_metric([name, budget], max(0.0, limit - used[budget]))


def _limits(conn: Connection, streams: Sequence[str]) -> dict[str, dict[str, float]]:
    """The budget limits set in the first event (run.started, campaign.started) of each of
    `streams`: read from the log, since no read model keeps them. A bounded number of
    rows, found by the (stream, version) key."""
    if not streams:
        return {}
    query = select(EVENTS.c.stream, EVENTS.c.payload).where(
        EVENTS.c.stream.in_(list(streams)), EVENTS.c.version == 0
    )
    limits = {}
    for stream, payload in conn.execute(query):
        budget = payload.get("budget") or {}
        limits[stream] = {k: v for k, v in budget.items() if k in BUDGETS and v is not None}
    return limits


def _spend(conn: Connection, key: Any, names: Sequence[str]) -> dict[str, tuple[int, float]]:
    """Tokens and known dollars of the runs whose `key` (run or campaign) is one of
    `names`, from the curves' per-run totals: one row a run, where the ledger has one a
    call (a campaign's spend from the ledger was a second scan of it: 100-150 ms at
    1,000,000 events, bench/exporter.py)."""
    if not names:
        return {}
    query = (
        select(
            key,
            func.coalesce(func.sum(CURVE_RUNS.c.tokens), 0),
            func.coalesce(func.sum(cast(CURVE_RUNS.c.cost_usd, Numeric)), 0),
        )
        .where(key.in_(list(names)))
        .group_by(key)
    )
    return {name: (int(tokens), float(dollars)) for name, tokens, dollars in conn.execute(query)}


CAMPAIGN_CALL_KINDS = ("review", "inspection")
"""The ledger's kinds of model calls a campaign's budget counts beside its runs': its
reviewers' and the inspector's (whose stream carries the inspected run's campaign)."""


def _review_spend(conn: Connection, campaigns: Sequence[str]) -> dict[str, tuple[int, float]]:
    """Tokens and known dollars of each of `campaigns`' calls outside its runs (its
    reviewers' and the inspector's), from the ledger's rows of those kinds (found by its
    campaign and kind index)."""
    if not campaigns:
        return {}
    query = (
        select(
            LEDGER.c.campaign,
            func.coalesce(func.sum(LEDGER.c.total_tokens), 0),
            func.coalesce(func.sum(_known_cost()), 0),
        )
        .where(LEDGER.c.campaign.in_(list(campaigns)), LEDGER.c.kind.in_(CAMPAIGN_CALL_KINDS))
        .group_by(LEDGER.c.campaign)
    )
    return {name: (int(tokens), float(dollars)) for name, tokens, dollars in conn.execute(query)}


def _known_cost() -> Any:
    """Known costs only (an unknown one is counted apart, never as 0), summed as exact
    decimals: float sums in another order (a parallel plan) differ in the last digits,
    and two exporters must give the same answer."""
    return case((LEDGER.c.cost_known.is_(True), cast(LEDGER.c.cost_usd, Numeric)), else_=None)


def _ledger_metrics(conn: Connection, bounds: Bounds) -> list[Metric]:
    """Actions, model calls, tokens and dollars, from one scan of the ledger grouped by
    every label at once (the groups are few: tools and models by labs)."""
    c = LEDGER.c
    unknown = case((c.cost_known.is_(False), 1), else_=0)
    query = select(
        c.kind,
        c.tool,
        c.lab,
        c.model,
        c.status,
        c.phase,
        func.count(),
        func.max(c.position),
        *(func.coalesce(func.sum(getattr(c, col)), 0) for col in TOKEN_KINDS.values()),
        func.sum(_known_cost()),  # NULL where no call of the group has a known cost
        func.sum(unknown),
    ).group_by(c.kind, c.tool, c.lab, c.model, c.status, c.phase)
    groups = [tuple(row) for row in conn.execute(query)]
    labs = _most_recent(((g[2], g[7]) for g in groups), bounds.labs)
    models = _most_recent(((g[3], g[7]) for g in groups if g[0] not in TOOL_KINDS), bounds.models)

    actions: dict[tuple[str, ...], float] = {}
    calls: dict[tuple[str, ...], float] = {}
    tokens: dict[tuple[str, ...], float] = {}
    exact: dict[tuple[str, ...], Decimal] = {}
    """Dollars by model and lab, summed over the groups as decimals: float sums of the
    groups' exact sums came out as 0.020548999999999998 for 0.020549."""
    unknown_cost: dict[tuple[str, ...], float] = {}
    for kind, tool, lab, model, status, phase, count, _, *sums in groups:
        lab_label = _bounded(lab, labs)
        if kind in TOOL_KINDS:
            if is_action(tool or NONE, reported=kind == "reported"):
                _add(actions, (tool or NONE, phase or NONE, lab_label), count)
            continue
        model_label = _bounded(model, models)
        if kind in MODEL_KINDS:  # a reviewer's and the inspector's calls are model calls too
            _add(calls, (model_label, OUTCOMES.get(status, NONE)), count)
        for kind_label, value in zip(TOKEN_KINDS, sums[:4], strict=True):
            _add(tokens, (model_label, kind_label), int(value))
        if sums[4] is not None:  # a model with no known cost has no dollars series, not 0
            key = (model_label, lab_label)
            exact[key] = exact.get(key, Decimal(0)) + Decimal(str(sums[4]))
        _add(unknown_cost, (model_label, lab_label), int(sums[5]))
    dollars = {key: float(value) for key, value in exact.items()}
    return [
        _counter(
            "labrxiv_actions",
            "Tool calls labs made, by tool, research phase (none: a lab without phases) and lab.",
            ["tool", "phase", "lab"],
            actions,
        ),
        _counter(
            "labrxiv_model_calls",
            "Model calls (each physical attempt), by model and outcome (responded, failed, "
            "unknown: written ahead with no outcome recorded).",
            ["model", "outcome"],
            calls,
        ),
        _counter(
            "labrxiv_model_tokens",
            "Tokens of model calls and model-graded attempts, by model and kind (input, "
            "cached_input: part of input, output, reasoning: part of output).",
            ["model", "kind"],
            tokens,
        ),
        _counter(
            "labrxiv_model_cost_dollars",
            "Dollars of model calls at the prices frozen in their events, by model and lab; "
            "known costs only (see labrxiv_model_unknown_cost_calls_total).",
            ["model", "lab"],
            dollars,
        ),
        _counter(
            "labrxiv_model_unknown_cost_calls",
            "Model calls and gradings whose cost is unknown (no price, or no usage "
            "reported): counted apart, never as $0.",
            ["model", "lab"],
            unknown_cost,
        ),
    ]


def _most_recent(names: Iterable[tuple[str | None, int]], limit: int) -> set[str | None]:
    """The `limit` names whose latest ledger row is the most recent."""
    latest: dict[str | None, int] = {}
    for name, position in names:
        latest[name] = max(position, latest.get(name, 0))
    ranked = sorted(latest, key=lambda n: (-latest[n], n or ""))
    return set(ranked[:limit])


def _bounded(name: str | None, shown: set[str | None]) -> str:
    if name not in shown:
        return OTHER
    return name or NONE


def _add(into: dict[tuple[str, ...], float], key: tuple[str, ...], value: float) -> None:
    into[key] = into.get(key, 0) + value


def _counter(
    name: str, doc: str, labels: list[str], values: dict[tuple[str, ...], float]
) -> Metric:
    metric = CounterMetricFamily(name, doc, labels=labels)
    for key in sorted(values):
        metric.add_metric(list(key), values[key])
    return metric


def _papers(conn: Connection) -> Metric:
    query = select(PAPERS.c.task, func.count()).group_by(PAPERS.c.task)
    values: dict[tuple[str, ...], float] = {(task or NONE,): n for task, n in conn.execute(query)}
    return _counter("labrxiv_papers", "Papers in the archive, by task.", ["task"], values)


def _findings(conn: Connection) -> list[Metric]:
    """Failure-mode findings and integrity verdicts, when those read models exist."""
    names = set(inspect(conn).get_table_names())
    metrics: list[Metric] = []
    if "findings" in names:
        metric = GaugeMetricFamily(
            "labrxiv_findings",
            "Failure-mode findings of runs so far, by detector and severity.",
            labels=["detector", "severity"],
        )
        query = select(_FINDINGS.c.detector, _FINDINGS.c.severity, func.count()).group_by(
            _FINDINGS.c.detector, _FINDINGS.c.severity
        )
        for detector, severity, n in sorted(conn.execute(query)):
            metric.add_metric([detector, severity], n)
        metrics.append(metric)
    if "findings_runs" in names:
        metric = GaugeMetricFamily(
            "labrxiv_run_verdicts",
            "Runs by integrity verdict (PASS, SUSPICIOUS, FAIL) from their findings so far.",
            labels=["verdict"],
        )
        query = select(_VERDICTS.c.verdict, func.count()).group_by(_VERDICTS.c.verdict)
        for verdict, n in sorted(conn.execute(query)):
            metric.add_metric([verdict], n)
        metrics.append(metric)
    return metrics
