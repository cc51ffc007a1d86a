"""The behaviour figures of one run, as frozen values a person, a page and JSON all read.

docs/analysis.md ("Behaviour") defines every figure; `analysis.tally` computes them.
Every value is plain (numbers, strings, dicts of them), so `dataclasses.asdict` is the
JSON shape.
"""

from dataclasses import dataclass
from typing import Literal

Third = Literal["start", "ramp", "steady"]
THIRDS: tuple[Third, ...] = ("start", "ramp", "steady")
NO_PHASE = "none"
"""The phase key of what happened before any `phase.entered` (and of every offline run)."""


@dataclass(frozen=True)
class DensityBin:
    """Actions in one equal slice of the run's elapsed time."""

    start_s: float
    end_s: float
    actions: int
    per_hour: float


@dataclass(frozen=True)
class Density:
    """How many actions (tool calls) the run took per hour, overall and over time."""

    actions: int
    per_hour: float | None
    """Actions over the run's duration in hours; None for a run with no duration."""
    bins: tuple[DensityBin, ...]


@dataclass(frozen=True)
class ToolMix:
    """Which tools the run called: in all, by research phase, by third of the run."""

    by_tool: dict[str, int]
    by_phase: dict[str, dict[str, int]]
    """Phase → tool → calls; empty when the run entered no phase (offline policies)."""
    phases_note: str | None
    """Why `by_phase` is empty, when it is."""
    by_third: dict[str, dict[str, int]]
    """`start` / `ramp` / `steady` → tool → calls, by the call's elapsed time."""


@dataclass(frozen=True)
class Gaps:
    """Seconds between consecutive actions."""

    count: int
    median_s: float | None
    p90_s: float | None
    max_s: float | None


@dataclass(frozen=True)
class Tokens:
    """Model tokens by the one counting rule (`events.spend`), reasoning apart."""

    total: int
    """Input plus output (what a token budget counts)."""
    reasoning: int
    """Reasoning tokens (part of the output)."""
    rest: int
    """`total - reasoning`: input and visible output."""
    reasoning_share: float | None
    input: int
    cached_input: int
    output: int
    model_calls: int
    """Physical calls written ahead (`model.called`), retries included."""
    answered: int
    failed: int
    unknown_outcome: int
    """Calls with neither an answer nor a failure (the worker died mid-call)."""


@dataclass(frozen=True)
class TimeUse:
    """Where the run's elapsed time went."""

    duration_s: float
    tools_s: float
    by_tool_s: dict[str, float]
    model_s: float
    """Model latency: answered and failed calls."""
    idle_s: float
    """The rest: `duration_s - tools_s - model_s`, never below 0 (deciding, queueing)."""


@dataclass(frozen=True)
class Money:
    """Dollars spent, with the count of costs that had no known price (`events.spend`)."""

    dollars: float
    """Known costs only."""
    priced: int
    """Answers and model-using gradings counted."""
    unknown_cost: int
    """Of those, how many have no known cost (in no dollar total)."""


@dataclass(frozen=True)
class Cost(Money):
    """What a part of the run spent: its money and tokens."""

    tokens: int


@dataclass(frozen=True)
class MoneyUse(Money):
    """Where the run's money went."""

    by_phase: dict[str, Cost]
    """The phase the call was made in (gradings: the phase when scored)."""
    by_model: dict[str, Cost]
    """The model that answered (gradings: the grader's model)."""


@dataclass(frozen=True)
class UsefulWindow:
    """When the run's best normalized score last improved."""

    scored: int
    """Scored attempts (`experiment.scored`)."""
    best: float | None
    """The best normalized score; None when no attempt had one."""
    best_attempt: int | None
    best_at_s: float | None
    """Elapsed seconds at the scoring that set the best."""
    best_step: int | None
    """The lab step (as `labrxiv replay` numbers them) that set the best."""
    after_s: float | None
    """Seconds of the run after it."""
    after_share: float | None
    """`after_s / duration_s`: the share of the run that did not improve the best."""


@dataclass(frozen=True)
class Behaviour:
    """What a run did with its time, tokens and money: the behaviour figures of one run."""

    run: str
    task: str | None
    lab: str | None
    policy: str | None
    campaign: str | None
    finished: str | None
    """The `run.finished` reason; None while the run is running."""
    events: int
    steps: int
    """Lab steps, step 0 (`run.started`) included."""
    papers: int
    duration_s: float
    """From `run.started` to the run's last event."""
    density: Density
    tool_mix: ToolMix
    gaps: Gaps
    tokens: Tokens
    time: TimeUse
    money: MoneyUse
    useful: UsefulWindow
