"""Run events: one lab's attempt at one task, from start to finish."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from events.payloads.base import Payload

FinishReason = Literal["done", "budget", "error", "cancelled"]


class Budget(BaseModel):
    """Limits a run may not cross; `None` means no limit of that kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempts: int | None = Field(default=None, ge=1)
    """Scored experiments the lab may make."""
    wall_seconds: float | None = Field(default=None, gt=0)
    """Elapsed time from the run's start."""
    tokens: int | None = Field(default=None, ge=1)
    """Model tokens of every kind, summed."""
    dollars: float | None = Field(default=None, gt=0)
    """Model spend at the frozen prices."""
    steps: int | None = Field(default=None, ge=1)
    """Lab steps (one policy decision each)."""


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
    reads_archive: bool = False
    """Whether the lab may read the shared archive (campaign mode `archive`)."""
    papers: int = Field(default=1, ge=1)
    """How many papers the lab is asked to write before it finishes."""


class RunFinished(Payload):
    """A run ended; nothing more is appended to its stream."""

    type: Literal["run.finished"] = "run.finished"
    reason: FinishReason
    """done, budget (a limit was reached), error, or cancelled."""
    detail: str = ""
    """A human-readable explanation, e.g. which budget or which error."""
