"""The task card (`gym/<id>/task.toml`): what a task asks, how it is scored, what it allows.

A task bundle is a folder:
- `task.toml`: this card;
- `workspace/`: the starter files copied into each run's workspace;
- `grader/`: the trusted grader, run as a separate process, never copied;
- `hidden/`: data the agent must never see (labels, test splits), never copied;
- `baselines/`: scripts that reproduce the card's baseline and reference scores.
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workers.gym import conditions

PolicyName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]
"""A policy's name; which names exist is checked against the policies found
(`workers/lab/policies`) by `labrxiv tasks validate` and by the workers."""
ParamValue = int | float | str | bool


class _Strict(BaseModel):
    # Finite numbers only: TOML writes `nan` and `inf`, and a card's `sota = nan` made
    # every run on the task end in error (found running labrxiv from outside).
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Subtask(_Strict):
    """One scored part of the task."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Key of the subtask in the grader's output."""
    metric: str
    """What is measured (accuracy, forgetting, ndcg…)."""
    direction: Literal["maximize", "minimize"]
    """Whether higher or lower is better."""
    baseline: float
    """The score of the bundle's baseline method (reproduced by `reproduce.baselines`)."""
    sota: float
    """The best known (reference) score, for normalization."""
    description: str = ""
    """What the subtask measures, for people and for LLM labs."""

    @model_validator(mode="after")
    def _sota_beats_baseline(self) -> "Subtask":
        # Progress is measured as a fraction of the gap from the baseline to the SOTA
        # (docs/tasks.md): with no gap there is none to measure, and with the SOTA on the
        # wrong side better scores rank lower.
        if self.sota == self.baseline:
            raise ValueError(
                f"subtask {self.name}: its sota equals its baseline ({self.sota:g}): "
                "there is no gap from baseline to SOTA to measure progress in"
            )
        from workers.gym.scoring import better  # here: scoring imports this module

        if not better(self, self.sota, self.baseline):
            higher = "higher" if self.direction == "maximize" else "lower"
            raise ValueError(
                f"subtask {self.name}: its sota {self.sota:g} is not better than its baseline "
                f"{self.baseline:g} ({self.direction}: {higher} is better)"
            )
        return self


class Budgets(_Strict):
    """Per-lab budgets of every run on the task; an option of the command that starts the
    run (`campaign`, `demo`, `fork`) sets that limit instead (`workers.lab.budget.run_budget`)."""

    attempts: int = Field(default=8, ge=1)
    """Scored experiments (calls to `evaluate`)."""
    wall_seconds: float = Field(default=600, gt=0)
    """Elapsed time of a run."""
    tokens: int | None = Field(default=None, ge=1)
    """Model tokens of every kind, summed; none: no limit."""
    dollars: float | None = Field(default=None, gt=0)
    """Model spend at the frozen prices; none: no limit."""
    steps: int | None = Field(default=None, ge=1)
    """Tool calls; none: no limit."""


class Grader(_Strict):
    """How the trusted grader is run: `command` inside the bundle, workspace path appended."""

    command: list[str] = Field(min_length=1)
    """Argv relative to the bundle folder; `python` means this interpreter."""
    timeout_seconds: float = Field(default=300, gt=0)
    """The grader is killed after this long and the attempt is scored as failed."""
    env: list[str] = Field(default_factory=list)
    """Environment variables the grader needs (e.g. a model endpoint and key), passed
    through from the worker when set; the grader gets no other variable of the worker."""


class Reproduce(_Strict):
    """Commands that reproduce the card's numbers, run from the bundle folder."""

    baselines: str
    """Prints the baseline and reference scores the card records."""


class TaskCard(_Strict):
    """Everything labrxiv needs to know about a task."""

    id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    """The task id; equals the bundle folder's name."""
    title: str
    goal: str
    """The research goal, as a lab is told it."""
    primary: str
    """The subtask whose score is the run's score (best-so-far curves use it)."""
    policies: list[PolicyName] = Field(default_factory=lambda: ["search", "llm"], min_length=1)
    """Which policies can work on the task."""
    subtasks: list[Subtask] = Field(min_length=1)
    budgets: Budgets = Budgets()
    grader: Grader
    reproduce: Reproduce
    search_space: dict[str, list[ParamValue]] = Field(default_factory=dict)
    """Parameters an offline search agent may set, each with its allowed values."""
    search_space_conditions: dict[str, dict[str, list[ParamValue]]] = Field(default_factory=dict)
    """Parameters that apply only under conditions: name → {parameter: values}; it applies
    when each parameter named applies and has one of the values (`workers.gym.conditions`)."""
    entrypoint: str = "solution.py"
    """The workspace file a lab edits and experiments run."""

    @model_validator(mode="after")
    def _primary_is_a_subtask(self) -> "TaskCard":
        names = [s.name for s in self.subtasks]
        if len(set(names)) != len(names):
            raise ValueError(f"subtask names repeat: {names}")
        if self.primary not in names:
            raise ValueError(f"primary {self.primary!r} is not one of the subtasks {names}")
        for key, values in self.search_space.items():
            if not values:
                raise ValueError(f"search_space.{key} lists no values")
        if found := conditions.problems(self.search_space, self.search_space_conditions):
            raise ValueError("; ".join(found))
        return self

    @field_validator("search_space_conditions", mode="before")
    @classmethod
    def _values_as_lists(cls, raw: Any) -> Any:
        return conditions.as_lists(raw) if isinstance(raw, Mapping) else raw

    def applicable(self, config: Mapping[str, Any]) -> list[str]:
        """The search space's parameters that apply in `config`, sorted."""
        return conditions.applicable(
            self.search_space_conditions, sorted(self.search_space), config
        )

    def settings(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """`config` without the search space's parameters that do not apply in it."""
        applies = set(self.applicable(config))
        return {k: v for k, v in config.items() if k not in self.search_space or k in applies}

    def subtask(self, name: str) -> Subtask:
        """The subtask called `name`."""
        return next(s for s in self.subtasks if s.name == name)
