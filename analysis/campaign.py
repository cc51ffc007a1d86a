"""Behaviour of a set of runs (a campaign) summed from its runs' figures, one run at a
time: what the whole campaign did with its time, tokens and money."""

from collections import Counter
from dataclasses import dataclass

from analysis.figures import THIRDS, Behaviour, Cost
from analysis.stats import HOUR_S, quantile, share
from runstate.best import NORMALIZED, best_of


@dataclass(frozen=True)
class CampaignBehaviour:
    """The behaviour figures of a set of runs, summed (docs/analysis.md defines each)."""

    runs: int
    finished: dict[str, int]
    """Runs by how they ended (`running` for runs with no `run.finished`)."""
    actions: int
    run_hours: float
    """The runs' durations, summed, in hours."""
    per_hour: float | None
    """Actions per run-hour: `actions / run_hours`."""
    by_tool: dict[str, int]
    by_phase: dict[str, dict[str, int]]
    by_third: dict[str, dict[str, int]]
    tokens: int
    reasoning_tokens: int
    reasoning_share: float | None
    tools_s: float
    model_s: float
    idle_s: float
    dollars: float
    priced: int
    unknown_cost: int
    money_by_phase: dict[str, Cost]
    money_by_model: dict[str, Cost]
    scored_runs: int
    """Runs with a normalized score."""
    best: float | None
    """The best normalized score of any run."""
    after_share_median: float | None
    """Median over scored runs of the share of the run after its best last improved."""


class CampaignTally:
    """Sums runs' behaviour figures; `add` each run, then `result()`."""

    def __init__(self) -> None:
        self.runs = 0
        self.finished: Counter[str] = Counter()
        self.actions = 0
        self.seconds = 0.0
        self.by_tool: Counter[str] = Counter()
        self.by_phase: dict[str, Counter[str]] = {}
        self.by_third: dict[str, Counter[str]] = {name: Counter() for name in THIRDS}
        self.tokens = self.reasoning = 0
        self.tools_s = self.model_s = self.idle_s = 0.0
        self.dollars = 0.0
        self.priced = self.unknown_cost = 0
        self.money_by_phase: dict[str, Cost] = {}
        self.money_by_model: dict[str, Cost] = {}
        self.best: float | None = None
        self.after_shares: list[float] = []
        self.scored_runs = 0

    def add(self, b: Behaviour) -> None:
        self.runs += 1
        self.finished[b.finished or "running"] += 1
        self.actions += b.density.actions
        self.seconds += b.duration_s
        self.by_tool.update(b.tool_mix.by_tool)
        for phase, tools in b.tool_mix.by_phase.items():
            self.by_phase.setdefault(phase, Counter()).update(tools)
        for name, tools in b.tool_mix.by_third.items():
            self.by_third[name].update(tools)
        self.tokens += b.tokens.total
        self.reasoning += b.tokens.reasoning
        self.tools_s += b.time.tools_s
        self.model_s += b.time.model_s
        self.idle_s += b.time.idle_s
        self.dollars += b.money.dollars
        self.priced += b.money.priced
        self.unknown_cost += b.money.unknown_cost
        _add_costs(self.money_by_phase, b.money.by_phase)
        _add_costs(self.money_by_model, b.money.by_model)
        if b.useful.best is not None:
            self.scored_runs += 1
            held = [] if self.best is None else [self.best]
            self.best = best_of(NORMALIZED, [*held, b.useful.best])
            if b.useful.after_share is not None:
                self.after_shares.append(b.useful.after_share)

    def result(self) -> CampaignBehaviour:
        hours = self.seconds / HOUR_S
        return CampaignBehaviour(
            runs=self.runs,
            finished=dict(sorted(self.finished.items())),
            actions=self.actions,
            run_hours=hours,
            per_hour=self.actions / hours if hours > 0 else None,
            by_tool=dict(self.by_tool.most_common()),
            by_phase={k: dict(v.most_common()) for k, v in sorted(self.by_phase.items())},
            by_third={k: dict(v.most_common()) for k, v in self.by_third.items()},
            tokens=self.tokens,
            reasoning_tokens=self.reasoning,
            reasoning_share=share(self.reasoning, self.tokens),
            tools_s=self.tools_s,
            model_s=self.model_s,
            idle_s=self.idle_s,
            dollars=self.dollars,
            priced=self.priced,
            unknown_cost=self.unknown_cost,
            money_by_phase=dict(sorted(self.money_by_phase.items())),
            money_by_model=dict(sorted(self.money_by_model.items())),
            scored_runs=self.scored_runs,
            best=self.best,
            after_share_median=quantile(self.after_shares, 0.5),
        )


def _add_costs(into: dict[str, Cost], more: dict[str, Cost]) -> None:
    for key, cost in more.items():
        had = into.get(key)
        into[key] = (
            cost
            if had is None
            else Cost(
                dollars=had.dollars + cost.dollars,
                tokens=had.tokens + cost.tokens,
                priced=had.priced + cost.priced,
                unknown_cost=had.unknown_cost + cost.unknown_cost,
            )
        )
