"""The policy interface: a lab's next step, as the events and blobs it publishes.

Every policy (the offline `search` agent, `llm` labs, and those to come: scripted test
policies, forks, revisions after review) takes a step through the same method and
returns what the step recorded; the lab step around it (`workers/lab/step.py`) checks
the run's wall-time and step budgets before, and stamps, numbers and publishes after.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from events import EventStore
from events.payloads import LlmConfig, Payload
from runstate import RunState
from workers.gym.bundle import Bundle
from workers.lab.campaign_spend import CampaignSpend
from workers.lab.emitter import Emitter
from workers.llm import Gateway
from workers.llm.driver import PreparedCalls
from workers.stream_cache import StreamCache
from workers.tools.env import Archive, ToolEnv

StepOutcome = tuple[list[Payload], dict[str, bytes]]
"""The payloads of a step's events, in order, and the blobs they reference."""


@dataclass(frozen=True)
class StepInput:
    """What a policy's step works with; built by the lab step for each step."""

    state: RunState
    """The run as the log has it, folded up to `version`."""
    version: int
    """The version this step follows: the step's events get the versions after it."""
    bundle: Bundle
    env: ToolEnv
    """The run's tools, in its workspace."""
    archive: Archive
    store: EventStore
    streams: StreamCache
    """The worker's folded runs and first events of streams."""
    spend: CampaignSpend
    """The worker's fold of campaigns' model spend, for campaign budgets."""
    prepared: PreparedCalls
    """The model calls the worker wrote ahead, for the step that sends them."""
    inflight: Path
    """Markers of model calls being sent (outside every workspace)."""
    gateway: Callable[[LlmConfig | None], Gateway]
    """The model gateway for a run's model settings."""
    final: bool = True
    """False when the bus runs this step again later if the policy raises `RetryLater`
    (to wait without holding a worker); True when it must take the step now."""
    emitter: Emitter | None = None
    """Sends the run's events as they happen, for a policy that `runs_alone`; the events
    it returns then follow those sent."""


class Policy(Protocol):
    """Decides and takes a run's next step. A step delivered twice must ask for the same
    thing (deterministic for the same state): its events get the same ids."""

    name: ClassVar[str]
    """The name runs and task cards use (`RunStarted.policy`, `policies` of a card)."""
    card_needs: ClassVar[tuple[str, ...]]
    """The task card's sections it reads, which a card that names it must fill
    (`search_space` for `search`); `labrxiv tasks validate` checks them."""
    model_settings: ClassVar[frozenset[str]]
    """The model settings (fields of `RunStarted.llm`, an `LlmConfig`) its labs read; none
    for labs that call no model, whose runs carry no model settings. A command refuses an
    option its labs would not read."""
    runs_alone: ClassVar[bool] = False
    """Whether one step takes the whole run, sending its events as they happen
    (`StepInput.emitter`) while no other take of the run's steps starts (an agent's
    process: `workers.lab.lease.SESSION`)."""

    def step(self, step: StepInput) -> StepOutcome:
        """The events of the run's next step and the blobs they reference."""
