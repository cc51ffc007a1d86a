"""Archive events (AgentRxiv): papers submitted by labs and papers retrieved by labs."""

from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from events.payloads.base import Payload
from events.payloads.experiment import Direction


class Claim(BaseModel):
    """A number a paper reports, tied to the scored attempt that measured it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subtask: str
    """The task's subtask the number is for."""
    metric: str
    """What the number measures (accuracy, ndcg…)."""
    value: float = Field(allow_inf_nan=False)
    """The number as reported (finite)."""
    attempt: int | None = Field(default=None, ge=1)
    """The run's scored attempt (`experiment.scored`) it comes from; None if not measured."""
    direction: Direction | None = None
    """Which way the subtask is better, from the task card when the paper was submitted
    (never from the lab); None for a subtask the card does not have, and in papers
    submitted before it was recorded."""


class Experiment(BaseModel):
    """One graded attempt a paper reports: what was run and what the grader said."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempt: int = Field(ge=1)
    """The run's scored attempt (`experiment.scored`) it was."""
    config: dict[str, JsonValue]
    """The configuration the attempt ran."""
    scores: dict[str, Annotated[float, Field(allow_inf_nan=False)]]
    """Score per subtask, as reported (finite)."""


class PaperSubmitted(Payload):
    """A lab published a paper to the shared archive."""

    type: Literal["paper.submitted"] = "paper.submitted"
    paper_id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,80}$")
    """The archive id, unique across the archive."""
    task: str
    """The task the paper reports on."""
    title: str = Field(min_length=1, max_length=300)
    abstract: str = Field(max_length=5000)
    body: str = Field(max_length=200_000)
    """Markdown: method, results table, discussion."""
    method: dict[str, JsonValue] = {}
    """The configuration the paper's best result used (lets other labs start from it)."""
    claims: list[Claim] = []
    """The numbers the paper reports, structured."""
    experiments: list[Experiment] = []
    """Every graded attempt the paper reports (its results table, structured), so that
    readers learn from what did not work as well as from the best."""
    cited: list[str] = []
    """Archive ids of the papers it builds on."""
    revises: str | None = None
    """The paper id this one is a new version of, if any."""
    answers: list[UUID] = []
    """The `review.submitted` events of the revised paper this version answers."""


class PapersRetrieved(Payload):
    """A lab searched the archive and was shown these papers (lineage: who read what)."""

    type: Literal["papers.retrieved"] = "papers.retrieved"
    query: str
    """What the lab searched for."""
    paper_ids: list[str]
    """The papers returned, best first."""
