"""Every payload type, joined in one discriminated union on `type`.

To add an event type: write its model in the module of its domain (or a new one),
add it to `AnyPayload`, and document it in docs/events.md.
"""

from typing import Annotated, get_args

from pydantic import Field

from events.payloads.agent import (
    AgentConfig,
    AgentDiverged,
    AgentExited,
    AgentStarted,
    WorkspaceChanged,
)
from events.payloads.base import Payload
from events.payloads.campaign import CampaignFinished, CampaignInterrupted, CampaignStarted
from events.payloads.experiment import ExperimentScored
from events.payloads.inspection import (
    Evidence,
    InspectionConcluded,
    InspectionConfig,
    InspectionFailed,
    InspectionLooked,
    InspectionStarted,
    InspectionStopped,
)
from events.payloads.integrity import BudgetExceeded, IntegrityViolation
from events.payloads.model import (
    ContextTruncated,
    ModelCalled,
    ModelFailed,
    ModelResponded,
    PhaseEntered,
    Price,
    Usage,
)
from events.payloads.paper import Claim, Experiment, PapersRetrieved, PaperSubmitted
from events.payloads.review import (
    PaperDecided,
    ReviewAwaited,
    ReviewConfig,
    ReviewFailed,
    ReviewForm,
    ReviewReceived,
    ReviewRequested,
    ReviewStopped,
    ReviewSubmitted,
)
from events.payloads.run import (
    Budget,
    ForkPoint,
    LlmConfig,
    RunFinished,
    RunInterrupted,
    RunResumed,
    RunStarted,
)
from events.payloads.tool import FileDigest, ToolInvoked, ToolReturned

AnyPayload = Annotated[
    CampaignStarted
    | CampaignFinished
    | CampaignInterrupted
    | RunStarted
    | RunFinished
    | RunInterrupted
    | RunResumed
    | ToolInvoked
    | ToolReturned
    | ExperimentScored
    | PaperSubmitted
    | PapersRetrieved
    | IntegrityViolation
    | BudgetExceeded
    | ModelCalled
    | ModelResponded
    | ModelFailed
    | PhaseEntered
    | ContextTruncated
    | ReviewRequested
    | ReviewSubmitted
    | ReviewFailed
    | ReviewStopped
    | PaperDecided
    | ReviewAwaited
    | ReviewReceived
    | InspectionStarted
    | InspectionLooked
    | InspectionConcluded
    | InspectionFailed
    | InspectionStopped
    | AgentStarted
    | AgentExited
    | AgentDiverged
    | WorkspaceChanged,
    Field(discriminator="type"),
]
"""Any event's payload, told apart by its `type`: the one list of payload types (written
as a union, not built from a tuple at run time, so that a type checker sees it too)."""

PAYLOAD_TYPES: tuple[type[Payload], ...] = get_args(get_args(AnyPayload)[0])

BY_TYPE: dict[str, type[Payload]] = {cls.model_fields["type"].default: cls for cls in PAYLOAD_TYPES}

__all__ = [
    "AnyPayload",
    "BY_TYPE",
    "Budget",
    "AgentConfig",
    "AgentDiverged",
    "AgentExited",
    "AgentStarted",
    "BudgetExceeded",
    "Claim",
    "Experiment",
    "ContextTruncated",
    "ModelCalled",
    "ModelFailed",
    "ModelResponded",
    "PhaseEntered",
    "Price",
    "Usage",
    "IntegrityViolation",
    "LlmConfig",
    "PaperDecided",
    "PaperSubmitted",
    "ReviewAwaited",
    "ReviewConfig",
    "ReviewFailed",
    "ReviewRequested",
    "ReviewStopped",
    "ReviewReceived",
    "ReviewForm",
    "ReviewSubmitted",
    "PapersRetrieved",
    "CampaignFinished",
    "CampaignInterrupted",
    "CampaignStarted",
    "Evidence",
    "ExperimentScored",
    "InspectionConcluded",
    "InspectionConfig",
    "InspectionFailed",
    "InspectionLooked",
    "InspectionStarted",
    "InspectionStopped",
    "FileDigest",
    "ForkPoint",
    "PAYLOAD_TYPES",
    "Payload",
    "RunFinished",
    "RunInterrupted",
    "RunResumed",
    "RunStarted",
    "ToolInvoked",
    "ToolReturned",
    "WorkspaceChanged",
]
