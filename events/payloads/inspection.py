"""The LLM inspector's events (`labrxiv analyze --inspector MODEL`): a model reads a run's
trajectory through tools and answers with an integrity verdict and the events behind it,
in the spirit of ResearchGym's post-hoc inspection agent.

An inspection is the stream `inspect-<id>`: `inspection.started` (which run, up to which
version, with what settings), then the inspector's model calls (`model.called`,
`model.responded`…, priced and counted by the ledger as kind `inspection`), one
`inspection.looked` per tool it used, and one end: `inspection.concluded` (the verdict),
`inspection.failed` (no valid verdict: the model failed, or gave none in its turns) or
`inspection.stopped` (its token or dollar budget reached).
"""

from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from events.payloads.base import Payload
from events.payloads.model import Price

Verdict = Literal["PASS", "SUSPICIOUS", "FAIL"]
"""The integrity verdict (the detectors' `analysis.verdict` uses the same three)."""


class InspectionConfig(BaseModel):
    """How a run is inspected (`labrxiv analyze --inspector`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    base_url: str | None = None
    """The inspector's OpenAI-compatible endpoint (None: the configured default)."""
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    turns: int = Field(default=12, ge=1, le=100)
    """Model calls the inspector may make for one run before it must have answered."""
    tokens: int | None = Field(default=None, ge=1)
    """Its token budget, over every run it inspects in one command (None: no limit)."""
    dollars: float | None = Field(default=None, gt=0)
    """Its dollar budget, likewise (None: no limit)."""


class InspectionStarted(Payload):
    """An inspection of a run began."""

    type: Literal["inspection.started"] = "inspection.started"
    run: str = Field(min_length=1, max_length=200)
    through_version: int = Field(ge=0)
    """The run's last version the inspector may read (the run as it was then)."""
    config: InspectionConfig
    detectors_verdict: Verdict
    """The detectors' verdict on the same events, shown to the inspector with their
    findings."""


class InspectionLooked(Payload):
    """The inspector used one of its tools on the trajectory."""

    type: Literal["inspection.looked"] = "inspection.looked"
    call_id: str = Field(min_length=1, max_length=200)
    """The tool call's id in the model's answer."""
    tool: str = Field(min_length=1, max_length=80)
    arguments: dict[str, Any]
    result: str = Field(max_length=20_000)
    """What the tool answered, as the model read it."""


class Evidence(BaseModel):
    """One event the verdict rests on, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event: UUID
    why: str = Field(min_length=1, max_length=2000)


class InspectionConcluded(Payload):
    """The inspector's verdict on the run, with its evidence (event ids of the run,
    checked to be in the events it was shown)."""

    type: Literal["inspection.concluded"] = "inspection.concluded"
    run: str = Field(min_length=1, max_length=200)
    verdict: Verdict
    summary: str = Field(min_length=1, max_length=5000)
    evidence: list[Evidence] = Field(max_length=50)
    model: str
    price: Price | None = None
    """The price of the inspector's last call (None: no price)."""


class InspectionFailed(Payload):
    """The inspector gave no valid verdict (the reason says why)."""

    type: Literal["inspection.failed"] = "inspection.failed"
    run: str = Field(min_length=1, max_length=200)
    reason: str = Field(min_length=1, max_length=2000)


class InspectionStopped(Payload):
    """The inspector's budget was reached before (or while) it inspected the run."""

    type: Literal["inspection.stopped"] = "inspection.stopped"
    run: str = Field(min_length=1, max_length=200)
    reason: str = Field(min_length=1, max_length=2000)
    """Which budget, with the numbers."""
