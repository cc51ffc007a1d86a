"""Run events: one lab's attempt at one task, from start to finish."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from events.payloads.agent import AgentConfig
from events.payloads.base import Payload
from events.payloads.integrity import BudgetName
from events.payloads.model import Phase, Price

FinishReason = Literal["done", "budget", "error", "cancelled"]
BudgetSource = Literal["card", "command"]
"""Where a run's limit came from: the task card's `[budgets]`, or the command that
started the run (an option given to `campaign`, `demo`, `fork`…)."""


class Budget(BaseModel):
    """Limits a run may not cross; `None` means no limit of that kind."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    attempts: int | None = Field(default=None, ge=1)
    """Scored experiments the lab may make."""
    wall_seconds: float | None = Field(default=None, gt=0)
    """Elapsed time from the run's start, less the time it stood stopped (from each
    `run.interrupted` to its next event): `runstate.budget.wall_seconds`."""
    tokens: int | None = Field(default=None, ge=1)
    """Model tokens of every kind, summed."""
    dollars: float | None = Field(default=None, gt=0)
    """Model spend at the frozen prices."""
    steps: int | None = Field(default=None, ge=1)
    """Lab steps (one policy decision each)."""


class LlmConfig(BaseModel):
    """How an `llm` lab talks to its model (the key is never here: workers read it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    """The model for every phase without its own."""
    phase_models: dict[Phase, str] = {}
    """A different model per phase, e.g. a cheaper one for the literature review."""
    base_url: str | None = None
    """The OpenAI-compatible endpoint; None means the worker's OPENAI_BASE_URL."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    """Cap on each answer's tokens."""
    context_tokens: int = Field(default=32_000, ge=1000)
    """The model's context window; the conversation is cut to fit 3/4 of it."""
    tool_protocol: Literal["functions", "text"] = "functions"
    """`functions`: OpenAI function calling; `text`: tools described in the prompt and
    called with a `<tool>{json}</tool>` block, for models without function calling."""
    phase_calls: int = Field(default=12, ge=1)
    """Model calls a phase may take before the lab is moved to the next one."""
    prices: dict[str, Price] = {}
    """The price of each of the run's models (`model`, `phase_models`) in the price table
    of the command that started the run (its LABRXIV_PRICES over the shipped table), so
    every worker prices and budgets the run alike, whatever its own settings; a model
    left out had no price there and is priced by the worker's table."""


class ForkPoint(BaseModel):
    """Where a fork branches off its parent run: it inherits the parent's events up to
    and including `version` (the last event of step `step`), and continues with its own."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run: str
    """The parent run's stream."""
    step: int = Field(ge=0)
    """The parent's last step the fork inherits (steps as `labrxiv replay` numbers them)."""
    version: int = Field(ge=0)
    """The parent's last event the fork inherits."""


class RunStarted(Payload):
    """A lab started a run on a task."""

    type: Literal["run.started"] = "run.started"
    task: str
    """The task bundle id."""
    lab: str
    """The lab doing the run."""
    policy: str
    """The policy that decides its actions (`search`, `llm`, `simulated`…)."""
    seed: int = 0
    """The run's own seed, for policies that draw at random."""
    budget: Budget = Budget()
    """The limits the run must stay within."""
    budget_source: dict[BudgetName, BudgetSource] = {}
    """Where each limit of `budget` came from: `card` or `command` (a fork's inherited
    limit keeps its run's). Empty in logs written before it was recorded."""
    reads_archive: bool = False
    """Whether the lab may read the shared archive (campaign mode `archive`)."""
    review_rounds: int = Field(default=0, ge=0, le=5)
    """Revisions the lab may make of its last paper, each answering its reviews (its
    campaign's `--review-rounds`)."""
    archive_reads: Literal["all", "accepted"] = "all"
    """Which papers an archive-reading lab is shown: all (AgentRxiv), or only those its
    campaign's reviewers accepted (`--archive-reads accepted`, docs/review.md)."""
    papers: int = Field(default=1, ge=1)
    """How many papers the lab is asked to write before it finishes."""
    llm: LlmConfig | None = None
    """The model settings of a lab that calls a model (`llm`, `agent`); None for other
    policies."""
    agent: AgentConfig | None = None
    """What an `agent` lab runs (its command, environment and install folder); None for
    other policies."""
    forked_from: ForkPoint | None = None
    """Set for a fork (`labrxiv fork`): the run and step it branches off. The fork's
    state begins as its parent's at that point (no model or tool call is made again),
    with this event's settings (policy, model, budget) from then on."""
    sandbox: str | None = None
    """The sandbox backend the process that started the run chose for its tools (`jail`,
    `userns`: `LABRXIV_SANDBOX`); None when that process runs no tools itself (workers
    elsewhere, which each say theirs when they start)."""

    @model_validator(mode="after")
    def _sources_are_of_set_limits(self) -> "RunStarted":
        unset = [name for name in self.budget_source if getattr(self.budget, name) is None]
        if unset:
            raise ValueError(f"budget_source names limits the budget does not set: {unset}")
        return self


class RunFinished(Payload):
    """A run ended; nothing more is appended to its stream."""

    type: Literal["run.finished"] = "run.finished"
    reason: FinishReason
    """done, budget (a limit was reached), error, or cancelled."""
    detail: str = ""
    """A human-readable explanation, e.g. which budget or which error."""


class RunInterrupted(Payload):
    """The process working on the run was stopped (Ctrl-C of an embedded campaign, its
    `--timeout`) before the run finished: nobody works on it until it is resumed, and its
    next event shows it running again. The time to that event is no wall time of the run.
    Recorded beside the campaign's `campaign.interrupted`, in the run's own stream, so the
    run's state says how long it stood stopped."""

    type: Literal["run.interrupted"] = "run.interrupted"
    detail: str = Field(default="", max_length=2000)
    """What stopped it (e.g. `Ctrl-C in labrxiv demo`)."""


class RunResumed(Payload):
    """A step took up the run after a stop (`run.interrupted`): the stop ends here, and the
    step's own events follow in the same batch. Written first by the step that works on a
    stopped run (`workers.lab.emitter.resumed`), so a reader that selects a run's events
    by type still sees when each stop ended; a stop with no `run.resumed` (a log written
    before steps recorded it) ends at the run's next event."""

    type: Literal["run.resumed"] = "run.resumed"
